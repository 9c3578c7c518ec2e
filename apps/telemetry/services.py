"""Telemetry: sampling the fleet, rolling samples up and pruning them, reading series.

Sampling is not an Operation (a sample a minute per host would flood the
operations table): `collect_fleet` is called by a plain beat task on the
`telemetry` queue, served by one worker process (or, split into shards, on each
shard's queue by its own process: apps.telemetry.shards). It samples every
pinned host (of its shard) in `POZOL_TELEMETRY_THREADS` threads, one SSH round
trip each over that process's pooled connection (apps.remote.ssh: reconnects
with the pinned key when the connection dropped), so the collectors hold one
connection per host and a slow host holds one thread, not the round. Threads
only talk SSH and parse; the database is written by the calling thread. A failure is
recorded on the host's HostTelemetry (last error, when) and never raised.
"""

from __future__ import annotations

import gc
import logging
import re
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Func, JSONField
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KT, KeyTransform
from django.db.models.functions import JSONObject
from django.utils import timezone

from apps.common.errors import DomainError
from apps.fleet.models import Host
from apps.remote import ssh
from apps.remote.errors import AuthenticationFailed, RemoteError, Unreachable
from apps.remote.facts.host import HostFacts
from apps.telemetry import store, upkeep, victoria
from apps.telemetry.core import current, metrics, packing, series, vmformat
from apps.telemetry.core.command import SAMPLE_TIMEOUT, sample_command
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.rates import as_before, rates
from apps.telemetry.core.rollup import FIVE_MINUTES, HOUR, Retention
from apps.telemetry.core.sample import NOT_AVAILABLE, Sample
from apps.telemetry.core.spec import SampleSpec, spec_from_facts
from apps.telemetry.models import HostTelemetry, RawChunk, RawSample, Rollup, RollupChunk
from apps.telemetry.shards import WHOLE, Shard
from apps.telemetry.upkeep import ROLLUP_GRACE, Maintained, prune, retention  # noqa: F401

logger = logging.getLogger("pozol.telemetry")

# Discovery's facts (tens of KB) typed into a spec once per discovery, not per sample.
_specs: dict[tuple[int, datetime | None], SampleSpec] = {}


# -- collection ------------------------------------------------------------------------

@dataclass(frozen=True)
class Taken:
    """One host's answer: a sample, or why there is none."""

    host_id: int
    sample: Sample | None
    duration: float
    error: str = ""
    code: str = ""
    failure: RemoteError | None = None  # what SSH raised, when it did


def collect_fleet(shard: Shard = WHOLE) -> list[Taken]:
    """One round of the shard's hosts (the whole fleet by default), written as one batch."""
    # Facts (tens of KB a host) are read only when the host was discovered again.
    # Unreachable hosts are tried too: the sample that answers again ends their outage
    # a minute after it ends, not at the next discovery.
    started = time.monotonic()
    hosts = list(shard.filter(Host.objects, "pk").filter(host_key_state=Host.KeyState.PINNED)
                 .exclude(facts={}).defer("facts"))
    if not hosts:
        return []
    specs = _specs_of(hosts)
    jobs = [(host.pk, host.ssh_target(), specs[host.pk]) for host in hosts]
    threads = min(settings.POZOL["TELEMETRY_THREADS"], len(jobs))
    with ThreadPoolExecutor(threads, thread_name_prefix="telemetry") as pool:
        taken = list(pool.map(lambda job: take(*job), jobs))
    record_all(taken, {pk: list(spec.skipped) for pk, spec in specs.items()})
    # Which worker sampled which shard, in that worker's log.
    logger.info("telemetry shard %d of %d: %d of %d hosts sampled in %.1f s", shard.index,
                shard.count, sum(1 for t in taken if t.sample is not None), len(taken),
                time.monotonic() - started)
    return taken


def _specs_of(hosts: list[Host]) -> dict[int, SampleSpec]:
    """Each host's spec; the facts of hosts discovered since (every host, after a
    restart) read in one query, not one each."""
    stale = [h.pk for h in hosts if (h.pk, h.last_discovery_at) not in _specs]
    facts = dict(Host.objects.filter(pk__in=stale).values_list("pk", "facts")) if stale else {}
    for host in hosts:
        if host.pk in facts:
            host.facts = facts[host.pk]
    return {host.pk: spec_of(host) for host in hosts}


def spec_of(host: Host) -> SampleSpec:
    key = (host.pk, host.last_discovery_at)
    spec = _specs.get(key)
    if spec is None:
        for old in [k for k in _specs if k[0] == host.pk]:
            del _specs[old]
        spec = _specs[key] = spec_from_facts(HostFacts.from_dict(host.facts))
    return spec


def take(host_id: int, target: ssh.Target, spec: SampleSpec) -> Taken:
    """One round trip; SSH and parsing only (runs in a collector thread)."""
    started = time.monotonic()
    run = ssh.session(target, connect_timeout=settings.POZOL["SSH_CONNECT_TIMEOUT"])
    try:
        answer = run(sample_command(spec), timeout=SAMPLE_TIMEOUT, check=False)
        if answer.exit_code != 0 and not answer.stdout.strip():  # the shell itself failed
            return Taken(host_id, None, time.monotonic() - started,
                         f"the sample command failed (exit {answer.exit_code}): "
                         f"{answer.stderr.strip()[:500]}", "sample_failed")
        sample = parse_sample(answer.stdout, spec, timezone.now())
    except RemoteError as error:
        return Taken(host_id, None, time.monotonic() - started, str(error), error.code, error)
    except Exception as error:  # a bug must not stop the other hosts' samples
        logger.exception("telemetry sample of host #%s failed", host_id)
        return Taken(host_id, None, time.monotonic() - started, f"internal error: {error}",
                     "internal_error")
    return Taken(host_id, sample, time.monotonic() - started)


def record(taken: Taken, *, skipped: list[str] | None = None) -> RawSample | None:
    """One host's answer recorded (record_all of one)."""
    record_all([taken], {taken.host_id: skipped or []})
    if taken.sample is None:
        return None
    return RawSample.objects.filter(host_id=taken.host_id,
                                    taken_at=taken.sample.taken_at).order_by("-pk").first()


# Each host's last sample as this process recorded it: (taken at, sample, recent). The
# next round makes rates from it without reading 4 KB of JSON per host back, as long
# as the database still has that sample as the host's last (one small query checks).
_previous: dict[int, tuple[datetime, Sample, dict]] = {}

# A round's rows, one a host: its raw sample's columns, then its state row's.
_ROUND = ("host_id bigint, taken_at timestamptz, \"values\" jsonb, missing jsonb, "
          "last_sample jsonb, last_duration float8, skipped jsonb, arc_hit_rate float8, "
          "tps float8, capacity integer, used bigint, space_saved bigint, "
          "cache_hit_rate float8, recent jsonb")


def record_all(answers: list[Taken], skipped: dict[int, list[str]]) -> None:
    """A round's answers written in a constant number of queries: every answer's raw
    row and state with one COPY into a temporary table, then one INSERT and one
    UPDATE from it, errors with one UPDATE; with the VictoriaMetrics store, each
    metric's value of each sample in one POST too, sent while the INSERT and UPDATE
    run."""
    if not answers:
        return
    with _cycles_collected_after():
        _record_all(answers, skipped)


@contextmanager
def _cycles_collected_after() -> Iterator[None]:
    """A round builds, and after a restart decodes, hundreds of small objects a host
    that hold no cycles; each batch of allocations set the cyclic collector off again
    over every live object (at 10,000 hosts, about 1.3 s of a 7 s first round).
    Reference counting frees what the round drops; a cycle waits for the round's end."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _record_all(answers: list[Taken], skipped: dict[int, list[str]]) -> None:
    previous = _previous_samples([a.host_id for a in answers])
    failed = [a for a in answers if a.sample is None]
    answered = [a for a in answers if a.sample is not None]
    for taken in failed:
        _outage_began(taken)
    _outages_ended(answered)
    remembered: dict[int, tuple[datetime, Sample, dict]] = {}
    history: list[str] = []
    rows = _rows(answered, previous, skipped, remembered, history)
    # The POST goes beside the database's work, not after it: each store works while
    # the other does (VictoriaMetrics' answer to a host's very first round, when it
    # registers the host's series, is the slowest of all). Its thread touches no
    # database; the round ends when both have.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="victoria") as beside:
        posting = None
        with transaction.atomic():
            if failed:
                _record_failures(failed)
            if answered:
                _take_in(rows)
                if victoria.enabled():
                    posting = beside.submit(victoria.write_round, "".join(history),
                                            len(answered))
                _apply_round()
            transaction.on_commit(lambda: _previous.update(remembered))
    if posting is not None:
        posting.result()


def _rows(answered: list[Taken], previous: dict[int, tuple[Sample | None, dict]],
          skipped: dict[int, list[str]], remembered: dict, history: list[str],
          ) -> Iterator[tuple]:
    """Each answered host's row of the round, made when the COPY asks for it: Python
    makes a host's documents while the server parses the ones before (jsonb's parse
    of a round's documents is as long as making them). On the way it fills
    `remembered` (what the next round reads from memory) and, with VictoriaMetrics
    on, `history` (the lines to POST)."""
    interval = _interval()
    to_victoria = victoria.enabled()
    for taken in answered:
        sample = taken.sample
        before, recent = previous.get(taken.host_id, (None, {}))
        interval_rates = rates(before, sample, interval)  # shared by both below
        now = current.current(interval_rates, sample)
        recent = current.remember(recent, sample.taken_at.timestamp(), now)
        stored = series.stored(sample, before)
        if to_victoria:
            history.append(vmformat.lines(taken.host_id, sample.taken_at,
                                          metrics.interval_values(interval_rates, stored)))
        kept = as_before(sample)
        remembered[taken.host_id] = (sample.taken_at, kept, recent)
        yield (taken.host_id, sample.taken_at, store.json_text(stored),
               store.json_text(dict(sample.missing)), store.json_text(kept),
               taken.duration, store.json_text(skipped.get(taken.host_id, [])),
               now.arc_hit_rate, now.tps, now.capacity, now.used, now.space_saved,
               now.cache_hit_rate, store.json_text(recent))


def _take_in(rows: Iterable[tuple]) -> None:
    """The round's rows into a temporary table with one COPY, streamed as made."""
    store.temporary("round_in", _ROUND)
    store.copy("round_in", [c.split()[0].strip('"') for c in _ROUND.split(", ")], rows)


def _apply_round() -> None:
    """The raw rows appended and the hosts' states updated from the round's table (its
    documents already parsed: they are copied, not read again)."""
    store.execute("""
        INSERT INTO telemetry_rawsample (host_id, taken_at, "values", missing)
        SELECT host_id, taken_at, "values", missing FROM round_in""")
    store.execute("""
        UPDATE telemetry_hosttelemetry t SET last_sample = i.last_sample,
            last_sample_at = i.taken_at, last_duration = i.last_duration,
            skipped = i.skipped, last_error = '', last_error_code = '',
            arc_hit_rate = i.arc_hit_rate, tps = i.tps, capacity = i.capacity,
            used = i.used, space_saved = i.space_saved, cache_hit_rate = i.cache_hit_rate,
            recent = i.recent
        FROM round_in i WHERE t.host_id = i.host_id""")


# What a round uses of a host's last sample is what rates() and series.stored() read; a
# sample read back after a restart leaves these out (a sixth of its JSON, which 10,000
# hosts' first round would fetch and decode for nothing).
_NOT_READ_BACK = ("datasets", "memory", "load", "missing")


def _previous_samples(host_ids: list[int]) -> dict[int, tuple[Sample | None, dict]]:
    """Each host's last sample and recent values: from this process's memory when the
    database agrees it is the last, else read, all hosts in one query (without
    _NOT_READ_BACK: only ever the `before` of rates() and series.stored())."""
    marks = dict(HostTelemetry.objects.filter(pk__in=_ids(host_ids))
                 .values_list("pk", "last_sample_at"))
    missing = [pk for pk in host_ids if pk not in marks]
    if missing:
        HostTelemetry.objects.bulk_create([HostTelemetry(host_id=pk) for pk in missing],
                                          ignore_conflicts=True, batch_size=2000)
    found: dict[int, tuple[Sample | None, dict]] = {}
    unread = []
    for pk in host_ids:
        known = _previous.get(pk)
        if known is not None and marks.get(pk) is not None and known[0] == marks[pk]:
            found[pk] = (known[1], known[2])
        elif marks.get(pk) is not None:
            unread.append(pk)
        else:
            found[pk] = (None, {})
    last_sample = RawSQL("last_sample - %s::text[]", (list(_NOT_READ_BACK),),
                         output_field=JSONField())
    for pk, last, recent in (HostTelemetry.objects.filter(pk__in=_ids(unread))
                             .values_list("pk", last_sample, "recent")):
        found[pk] = (Sample.from_dict(last) if last else None,
                     recent if isinstance(recent, dict) else {})
    return found


def _ids(ids: list[int]) -> RawSQL:
    """`pk__in` as one array parameter: Django makes a parameter of each id otherwise,
    and resolving 10,000 of them cost a first round about 0.3 s a query."""
    return RawSQL("SELECT unnest(%s::bigint[])", (ids,))


def _record_failures(failed: list[Taken]) -> None:
    at = timezone.now()
    store.temporary("failed_in", "host_id bigint, last_error text, last_error_code text, "
                                 "last_duration float8")
    store.copy("failed_in", ("host_id", "last_error", "last_error_code", "last_duration"),
               [(t.host_id, t.error[:2000], t.code[:64], t.duration) for t in failed])
    store.execute("""
        UPDATE telemetry_hosttelemetry t SET last_error = i.last_error,
            last_error_code = i.last_error_code, last_error_at = %s,
            last_duration = i.last_duration
        FROM failed_in i WHERE t.host_id = i.host_id""", [at])


# Failures that mean the host could not be got into (as discovery counts them); a slow
# or failing command on a host that answered is a missing sample, not an outage.
_OUTAGES = (Unreachable, AuthenticationFailed)


def _outage_began(taken: Taken) -> None:
    """The host's unreachable alert opens a sample after it stops answering (its rule
    says how long before anyone is told), not at the next discovery."""
    if isinstance(taken.failure, _OUTAGES):
        host = Host.objects.only("pk", "name").get(pk=taken.host_id)
        host.record_unreachable(taken.failure)


def _outages_ended(answered: list[Taken]) -> None:
    """Hosts marked unreachable that answered: one query finds them (usually none)."""
    down = set(Host.objects.filter(pk__in=[t.host_id for t in answered], reachable=False)
               .values_list("pk", flat=True))
    for taken in answered:
        if taken.host_id in down and Host.objects.filter(
                pk=taken.host_id, reachable=False).update(
                reachable=True, last_seen_at=taken.sample.taken_at):
            Host.objects.only("pk").get(pk=taken.host_id).resolve_unreachable()


def _interval() -> timedelta:
    return timedelta(seconds=settings.POZOL["TELEMETRY_INTERVAL"])


# -- rollups and retention: apps.telemetry.upkeep -------------------------------------------

def maintain(now: datetime | None = None) -> Maintained:
    """Roll closed buckets up, then delete what is past its retention; with the
    VictoriaMetrics store (which keeps the history) only the raw rows' tail is kept."""
    if victoria.enabled():
        return Maintained(0, 0, upkeep.prune_tail(now or timezone.now(), _interval()), 0)
    return upkeep.maintain(now or timezone.now())


# -- reading ------------------------------------------------------------------------------

RESOLUTION_SLACK = timedelta(minutes=1)
# A 7-day graph of 5-minute points is 2,016 rollups per series to read and turn into
# rates (over 300 ms at 200 hosts); past this many points the hourly rollups draw the
# same shape for a twelfth of the work.
MAX_FIVE_MINUTE_POINTS = 1000
RAW, FIVE, HOURLY = "raw", Rollup.Resolution.FIVE_MINUTE.value, Rollup.Resolution.HOURLY.value


class TelemetryError(DomainError):
    code = "invalid_telemetry_query"


class StoreUnavailable(TelemetryError):
    """The VictoriaMetrics store did not answer a read: the chart says so, no 500."""

    status = 503
    code = "telemetry_store_unavailable"


@dataclass(frozen=True)
class Reading:
    metric: metrics.Metric
    resolution: str
    start: datetime
    end: datetime
    series: list[metrics.Series]
    reason: str | None  # why there is nothing to show, when there is not


def resolution_for(start: datetime, end: datetime, now: datetime,
                   keep: Retention | None = None) -> str:
    """The finest resolution that is still kept back to `start`, and that keeps the
    number of points small for the span asked for (2,880 raw points in 48 hours, at
    most MAX_FIVE_MINUTE_POINTS 5-minute ones: a 7-day graph is hourly)."""
    keep = keep or retention()
    # "The last 48 hours" as a client computed it a moment ago still reads raw rows
    # (pruning keeps them back to its 5-minute-aligned cut-off, at least 48 h).
    reach = max(end - start, now - start) - RESOLUTION_SLACK
    if reach <= keep.raw:
        return RAW
    if reach <= keep.five_minute and end - start <= FIVE_MINUTES * MAX_FIVE_MINUTE_POINTS:
        return FIVE
    return HOURLY


def read(host: Host, metric_name: str, start: datetime | None = None,
         end: datetime | None = None, *, now: datetime | None = None) -> Reading:
    metric = metrics.METRICS.get(metric_name)
    if metric is None:
        raise TelemetryError(f"Unknown metric {metric_name!r}.", fields={
            "metric": [f"one of: {', '.join(metrics.METRICS)}"]})
    now = now or timezone.now()
    end = end or now
    start = start or end - timedelta(hours=1)
    if start >= end:
        raise TelemetryError("`from` must be before `to`.", fields={"from": ["before `to`"]})
    resolution = resolution_for(start, end, now)
    interval = _interval()
    if victoria.enabled():
        return _read_victoria(host, metric, resolution, start, end)
    if resolution == RAW:
        rows = _raw_rows(host, metric, start - 2 * interval, end)
        found = metrics.raw_series(metric, rows, interval)
    else:
        width = FIVE_MINUTES if resolution == FIVE else HOUR
        rows = _rolled_rows(host, metric, resolution, start - width, end)
        rows += _unrolled_tail(host, metric, resolution, start - width, end)
        found = metrics.rolled_series(metric, rows, width)
    shown = [metrics.Series(s.key, [(at, v) for at, v in s.points if start <= at <= end])
             for s in found]
    return Reading(metric, resolution, start, end, shown, _reason(host, metric, shown))


def _read_victoria(host: Host, metric: metrics.Metric, resolution: str, start: datetime,
                   end: datetime) -> Reading:
    """The same window read from VictoriaMetrics: a step of the resolution the
    PostgreSQL store would read (the interval, 5 minutes, an hour)."""
    step = {RAW: _interval(), FIVE: FIVE_MINUTES, HOURLY: HOUR}[resolution]
    try:
        found = victoria.series(host.pk, metric, start, end, step)
    except victoria.StoreUnavailable as error:
        logger.warning("telemetry: a chart of host #%s could not be read: %s", host.pk, error)
        raise StoreUnavailable(
            "The telemetry store (VictoriaMetrics) did not answer: no history can be drawn "
            "until it does. Current values are not affected.") from error
    # VictoriaMetrics' points are its steps across the window: the chart's as they are.
    return Reading(metric, resolution, start, end, found, _reason(host, metric, found))


def _raw_rows(host: Host, metric: metrics.Metric, start: datetime,
              end: datetime) -> list[metrics.Row]:
    """Only the fields the metric reads leave the database, where it is one object; of
    closed hours packed in chunks (apps.telemetry.upkeep), only its paths are unpacked
    and cut here as the database cuts rows."""
    rows = (RawSample.objects.filter(host=host, taken_at__gte=start, taken_at__lte=end)
            .order_by("taken_at").values_list("taken_at", KT("values__uptime"),
                                              _only(metric)))
    found = [(at, {"uptime": _float(uptime), metric.source: _cut(metric, source)})
             for at, uptime, source in rows]
    chunks = list(RawChunk.objects.filter(host=host, start__gt=start - upkeep.SPANS[upkeep.RAW],
                                          start__lte=end)
                  .order_by("start").values_list("start", "layout_id", "data"))
    keep = _raw_paths(metric)
    for hour, layout, data in chunks:
        for at, values, _ in store.raw_samples(hour, layout, data, keep):
            if start <= at <= end:
                uptime = values.get("uptime")
                found.append((at, {"uptime": None if uptime is None else float(uptime),
                                   metric.source: _cut(metric, _only_here(metric, values))}))
    if chunks:
        found.sort(key=lambda row: row[0])
    return found


def _raw_paths(metric: metrics.Metric):
    """Which of a packed hour's paths _raw_rows reads for the metric."""
    fields = set(metric.fields_read)
    depth = 2 if metric.per is not None else 1

    def keep(path: series.Path) -> bool:
        if path == ("uptime",):
            return True
        return path[0] == metric.source and (
            not fields or len(path) <= depth or path[depth] in fields)
    return keep


def _only_here(metric: metrics.Metric, values: dict) -> object:
    """_only(metric) of one unpacked row, as the database answers it (keys in JSONB's
    order: rawpack gives each object so)."""
    source = values.get(metric.source)
    if not metric.fields_read:
        return source
    names = sorted(metric.fields_read, key=lambda name: (len(name.encode()), name.encode()))
    if metric.per is None:
        part = source if isinstance(source, dict) else {}
        return {name: part.get(name) for name in names}
    if not isinstance(source, dict) or not source:
        return None
    return {key: {name: value.get(name) if isinstance(value, dict) else None
                  for name in names} for key, value in source.items()}


def _rolled_rows(host: Host, metric: metrics.Metric, resolution: str, start: datetime,
                 end: datetime) -> list[metrics.Row]:
    """Buckets of chunks (apps.telemetry.upkeep: closed spans) and of rows: packed ones
    unpacked to the metric's fields; JSON ones (written before packing) cut in the
    database as raw rows are. A row is newer than a chunk's bucket of the same start."""
    keep = _reads(metric)
    found: dict[datetime, dict | None] = {}
    chunks = (RollupChunk.objects.filter(host=host, resolution=resolution,
                                         start__gt=start - upkeep.SPANS[resolution],
                                         start__lte=end)
              .order_by("start").values_list("start", "layout_id", "data"))
    for at, layout, data in chunks:
        for bucket in store.chunk_buckets(at, layout, data):
            if start <= bucket.start <= end:
                found[bucket.start] = packing.values(bucket, keep).get(metric.source)
    rows = (Rollup.objects.filter(host=host, resolution=resolution, start__gte=start,
                                  start__lte=end)
            .order_by("start").values_list("start", _only(metric), "layout_id", "data"))
    for at, source, layout, data in rows:
        if data is not None:
            source = packing.values(store.bucket(at, None, layout, data), keep).get(
                metric.source)
        found[at] = source
    return [(at, {metric.source: _cut(metric, found[at])}) for at in sorted(found)]


def _reads(metric: metrics.Metric):
    """Which of a packed bucket's paths the metric reads."""
    fields = set(metric.fields_read)
    depth = 2 if metric.per is not None else 1

    def keep(path: series.Path) -> bool:
        return path[0] == metric.source and (
            not fields or (len(path) == depth + 1 and path[depth] in fields))
    return keep


def _unrolled_tail(host: Host, metric: metrics.Metric, resolution: str, start: datetime,
                   end: datetime) -> list[metrics.Row]:
    """The buckets after the host's rollup mark, rolled up here from raw rows as the
    tick will roll them: beat closes an hour only once it has ended (and 5 minutes
    more), so without them a 7-day graph would end an hour or more before now, a gap
    where samples were taken."""
    mark = upkeep.marks().get(resolution)
    since = max(start, mark or end - retention().raw)
    if since >= end:
        return []
    buckets = series.roll_up(_raw_rows(host, metric, since, end), FIVE_MINUTES)
    if resolution == HOURLY:
        buckets = series.merge(sorted(buckets.items()), HOUR)
    return [(at, {metric.source: values.get(metric.source)})
            for at, values in sorted(buckets.items())]


def _only(metric: metrics.Metric) -> KeyTransform | JSONObject | PerKeyFields:
    """The metric's source, cut down in the database to the fields it reads: one
    object (`{"hits": .., "misses": ..}` of the ARC's 24 fields for a hit rate), or
    each key's (`{"/pg/main": {"xact_commit": .., "xact_rollback": ..}}` of a
    cluster's 30 counters for TPS: 7 days of rollups of whole clusters took twice
    the 300 ms goal to fetch and walk, tests/bench/telemetry_scale.py)."""
    source = KeyTransform(metric.source, "values")
    if not metric.fields_read:
        return source
    if metric.per is not None:
        return PerKeyFields(source, fields=metric.fields_read)
    return JSONObject(**{name: KeyTransform(name, source) for name in metric.fields_read})


class PerKeyFields(Func):
    """{key: {field: value}} of a per-key source (pools, datasets, clusters), each
    key's object cut to `fields`; NULL when the source is."""

    output_field = JSONField()
    template = ("(SELECT jsonb_object_agg(per.key, jsonb_build_object(%(pairs)s)) "
                "FROM jsonb_each(%(expressions)s) AS per)")

    def __init__(self, source: KeyTransform, *, fields: tuple[str, ...]) -> None:
        # Field names come from apps.telemetry.core.metrics, never from a request.
        if not all(_FIELD.fullmatch(name) for name in fields):
            raise ValueError(f"not a field name: {fields!r}")
        pairs = ", ".join(f"'{name}', per.value -> '{name}'" for name in fields)
        super().__init__(source, pairs=pairs)


def _cut(metric: metrics.Metric, values: dict | None) -> dict | None:
    if not metric.fields_read:
        return values
    if metric.per is None:
        return _known(values)
    cut = {key: _known(fields) for key, fields in (values or {}).items()}
    return {key: fields for key, fields in cut.items() if fields} or None


def _known(values: dict | None) -> dict | None:
    """JSONObject names every field it was asked for: an absent one is unknown, left out."""
    known = {name: value for name, value in (values or {}).items() if value is not None}
    return known or None


_FIELD = re.compile(r"[a-z][a-z0-9_]*")


def _float(text: str | None) -> float | None:
    return float(text) if text is not None else None


# The sample command's sections behind each stored source (apps.telemetry.core.command).
_SECTIONS = {"arc": ("arc",), "memory": ("meminfo",), "pools": ("zpool_list",),
             "datasets": ("zfs_get",), "clusters": ("pg:0",)}


def _reason(host: Host, metric: metrics.Metric, found: list[metrics.Series]) -> str | None:
    """Why nothing is shown: the host has no such source, or no samples were taken."""
    if any(v is not None for s in found for _, v in s.points):
        return None
    state = HostTelemetry.objects.filter(host=host).first()
    last = state.last_sample if state else None
    if last is None:
        if state and state.last_error:
            return f"no sample yet: {state.last_error}"
        return "no sample taken yet"
    missing = last.get("missing") or {}
    for section in (*_SECTIONS.get(metric.source, ()), "zfs"):
        if section in missing:
            return missing[section]
    if metric.name == "zfs_dirty":  # from each pool's txg history (OpenZFS)
        txg_missing = [why for section, why in missing.items() if section.startswith("txgs:")]
        if txg_missing and len(txg_missing) >= len(last.get("pools") or ()):
            return txg_missing[0]
    if metric.source == "clusters" and not last.get("clusters"):
        return NOT_AVAILABLE + " (no PostgreSQL cluster is sampled)"
    if metric.source in ("pools", "datasets") and not last.get(metric.source):
        return NOT_AVAILABLE
    return "no value in this window"
