"""Telemetry: sampling the fleet, rolling samples up and pruning them, reading series.

Sampling is not an Operation (a sample a minute per host would flood the
operations table): `collect_fleet` is called by a plain beat task on the
`telemetry` queue, served by one worker process. It samples every reachable
pinned host in `POZOL_TELEMETRY_THREADS` threads, one SSH round trip each over
that process's pooled connection (apps.remote.ssh: reconnects with the pinned
key when the connection dropped), so the collector holds one connection per
host and a slow host holds one thread, not the round. Threads only talk SSH
and parse; the database is written by the calling thread. A failure is
recorded on the host's HostTelemetry (last error, when) and never raised.
"""

from __future__ import annotations

import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Func, JSONField
from django.db.models.fields.json import KT, KeyTransform
from django.db.models.functions import JSONObject
from django.utils import timezone

from apps.common.errors import DomainError
from apps.fleet.models import Host
from apps.remote import ssh
from apps.remote.errors import AuthenticationFailed, RemoteError, Unreachable
from apps.remote.facts.host import HostFacts
from apps.telemetry.core import current, metrics, rollup, series
from apps.telemetry.core.command import SAMPLE_TIMEOUT, sample_command
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.rollup import FIVE_MINUTES, HOUR, Retention
from apps.telemetry.core.sample import NOT_AVAILABLE, Sample
from apps.telemetry.core.spec import SampleSpec, spec_from_facts
from apps.telemetry.models import HostTelemetry, RawSample, Rollup

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


def collect_fleet() -> list[Taken]:
    # Facts (tens of KB a host) are read only when the host was discovered again.
    # Unreachable hosts are tried too: the sample that answers again ends their outage
    # a minute after it ends, not at the next discovery.
    hosts = list(Host.objects.filter(host_key_state=Host.KeyState.PINNED)
                 .exclude(facts={}).defer("facts"))
    if not hosts:
        return []
    specs = {host.pk: spec_of(host) for host in hosts}
    jobs = [(host.pk, host.ssh_target(), specs[host.pk]) for host in hosts]
    threads = min(settings.POZOL["TELEMETRY_THREADS"], len(jobs))
    with ThreadPoolExecutor(threads, thread_name_prefix="telemetry") as pool:
        taken = list(pool.map(lambda job: take(*job), jobs))
    for answer in taken:
        record(answer, skipped=list(specs[answer.host_id].skipped))
    return taken


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
    state, _ = HostTelemetry.objects.get_or_create(host_id=taken.host_id)
    if taken.sample is None:
        HostTelemetry.objects.filter(pk=state.pk).update(
            last_error=taken.error[:2000], last_error_code=taken.code[:64],
            last_error_at=timezone.now(), last_duration=taken.duration)
        _outage_began(taken)
        return None
    _outage_ended(taken)
    previous = Sample.from_dict(state.last_sample) if state.last_sample else None
    now = current.current(previous, taken.sample, _interval())
    with transaction.atomic():
        row = RawSample.objects.create(
            host_id=taken.host_id, taken_at=taken.sample.taken_at,
            values=series.stored(taken.sample, previous), missing=dict(taken.sample.missing))
        HostTelemetry.objects.filter(pk=state.pk).update(
            last_sample=taken.sample.to_dict(), last_sample_at=taken.sample.taken_at,
            last_duration=taken.duration, skipped=skipped or [], last_error="",
            last_error_code="", arc_hit_rate=now.arc_hit_rate, tps=now.tps,
            capacity=now.capacity, used=now.used, space_saved=now.space_saved,
            recent=current.remember(state.recent, taken.sample.taken_at.timestamp(), now))
    return row


# Failures that mean the host could not be got into (as discovery counts them); a slow
# or failing command on a host that answered is a missing sample, not an outage.
_OUTAGES = (Unreachable, AuthenticationFailed)


def _outage_began(taken: Taken) -> None:
    """The host's unreachable alert opens a sample after it stops answering (its rule
    says how long before anyone is told), not at the next discovery."""
    if isinstance(taken.failure, _OUTAGES):
        host = Host.objects.only("pk", "name").get(pk=taken.host_id)
        host.record_unreachable(taken.failure)


def _outage_ended(taken: Taken) -> None:
    if Host.objects.filter(pk=taken.host_id, reachable=False).update(
            reachable=True, last_seen_at=taken.sample.taken_at):
        Host.objects.only("pk").get(pk=taken.host_id).resolve_unreachable()


def _interval() -> timedelta:
    return timedelta(seconds=settings.POZOL["TELEMETRY_INTERVAL"])


# -- rollups and retention ------------------------------------------------------------

def retention() -> Retention:
    pozol = settings.POZOL
    return Retention(raw=timedelta(hours=pozol["TELEMETRY_RAW_HOURS"]),
                     five_minute=timedelta(days=pozol["TELEMETRY_FIVE_MINUTE_DAYS"]),
                     hourly=timedelta(days=pozol["TELEMETRY_HOURLY_DAYS"]))


@dataclass(frozen=True)
class Maintained:
    five_minute: int  # rollup rows made
    hourly: int
    pruned: int  # rows deleted, every resolution


# A sample is stamped when its answer arrives and written when the whole round
# ends (every host answered or timed out): rollups stay this far behind, so a
# bucket is never closed before its last sample is in.
ROLLUP_GRACE = timedelta(minutes=5)


def maintain(now: datetime | None = None) -> Maintained:
    """Roll closed buckets up, then delete what is past its retention."""
    now = now or timezone.now()
    settled = now - ROLLUP_GRACE
    made_5m = made_1h = 0
    for state in HostTelemetry.objects.all():
        made_5m += _roll_up_raw(state, rollup.closed_before(settled, FIVE_MINUTES))
        made_1h += _roll_up_hourly(state, rollup.closed_before(settled, HOUR))
    return Maintained(made_5m, made_1h, prune(now))


def _roll_up_raw(state: HostTelemetry, until: datetime) -> int:
    since = state.rolled_five_minute_to
    rows = RawSample.objects.filter(host_id=state.pk, taken_at__lt=until)
    if since is not None:
        rows = rows.filter(taken_at__gte=since)
    buckets = series.roll_up(rows.order_by("taken_at").values_list("taken_at", "values"),
                             FIVE_MINUTES)
    _save(state.pk, Rollup.Resolution.FIVE_MINUTE, buckets)
    HostTelemetry.objects.filter(pk=state.pk).update(rolled_five_minute_to=until)
    return len(buckets)


def _roll_up_hourly(state: HostTelemetry, until: datetime) -> int:
    since = state.rolled_hourly_to
    rows = Rollup.objects.filter(host_id=state.pk, resolution=Rollup.Resolution.FIVE_MINUTE,
                                 start__lt=until)
    if since is not None:
        rows = rows.filter(start__gte=since)
    buckets = series.merge(rows.order_by("start").values_list("start", "values"), HOUR)
    _save(state.pk, Rollup.Resolution.HOURLY, buckets)
    HostTelemetry.objects.filter(pk=state.pk).update(rolled_hourly_to=until)
    return len(buckets)


def _save(host_id: int, resolution: str, buckets: dict[datetime, dict]) -> None:
    # Re-running over a bucket (the tick died before moving its mark) replaces it.
    Rollup.objects.bulk_create(
        [Rollup(host_id=host_id, resolution=resolution, start=start, values=values)
         for start, values in buckets.items()],
        update_conflicts=True, unique_fields=["host", "resolution", "start"],
        update_fields=["values"], batch_size=500)


def prune(now: datetime) -> int:
    cut = rollup.cutoffs(now, retention())
    # Raw rows go only once rolled up: a host's mark may lag behind the cut-off.
    raw = RawSample.objects.filter(taken_at__lt=cut.raw).filter(
        taken_at__lt=F("host__telemetry__rolled_five_minute_to"))
    five = Rollup.objects.filter(resolution=Rollup.Resolution.FIVE_MINUTE,
                                 start__lt=cut.five_minute).filter(
        start__lt=F("host__telemetry__rolled_hourly_to"))
    hourly = Rollup.objects.filter(resolution=Rollup.Resolution.HOURLY, start__lt=cut.hourly)
    return sum(query.delete()[0] for query in (raw, five, hourly))


# -- reading ------------------------------------------------------------------------------

RESOLUTION_SLACK = timedelta(minutes=1)
# A 7-day graph of 5-minute points is 2,016 rollups per series to read and turn into
# rates (over 300 ms at 200 hosts); past this many points the hourly rollups draw the
# same shape for a twelfth of the work.
MAX_FIVE_MINUTE_POINTS = 1000
RAW, FIVE, HOURLY = "raw", Rollup.Resolution.FIVE_MINUTE.value, Rollup.Resolution.HOURLY.value


class TelemetryError(DomainError):
    code = "invalid_telemetry_query"


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


def _raw_rows(host: Host, metric: metrics.Metric, start: datetime,
              end: datetime) -> list[metrics.Row]:
    """Only the fields the metric reads leave the database, where it is one object."""
    rows = (RawSample.objects.filter(host=host, taken_at__gte=start, taken_at__lte=end)
            .order_by("taken_at").values_list("taken_at", KT("values__uptime"),
                                              _only(metric)))
    return [(at, {"uptime": _float(uptime), metric.source: _cut(metric, source)})
            for at, uptime, source in rows]


def _rolled_rows(host: Host, metric: metrics.Metric, resolution: str, start: datetime,
                 end: datetime) -> list[metrics.Row]:
    rows = (Rollup.objects.filter(host=host, resolution=resolution, start__gte=start,
                                  start__lte=end)
            .order_by("start").values_list("start", _only(metric)))
    return [(at, {metric.source: _cut(metric, source)}) for at, source in rows]


def _unrolled_tail(host: Host, metric: metrics.Metric, resolution: str, start: datetime,
                   end: datetime) -> list[metrics.Row]:
    """The buckets after the host's rollup mark, rolled up here from raw rows as the
    tick will roll them: beat closes an hour only once it has ended (and 5 minutes
    more), so without them a 7-day graph would end an hour or more before now, a gap
    where samples were taken."""
    marks = HostTelemetry.objects.filter(host=host).values_list(
        "rolled_hourly_to" if resolution == HOURLY else "rolled_five_minute_to", flat=True)
    mark = next(iter(marks), None)
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
