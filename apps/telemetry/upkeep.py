"""The rollup-and-prune tick (`telemetry.maintain`): incremental, for the whole fleet.

One mark per resolution (`RollupMark`) says up to which bucket start the fleet is
rolled up. A tick makes only the buckets that closed since: it reads the raw rows
of [mark, closed) through the time index an hour at a time, ordered by host, rolls
each host's up (apps.telemetry.core.packing, column by column) and writes every
host's buckets with one COPY; hourly buckets the same way from 5-minute ones. A
tick that did not run leaves the mark behind, and the next makes every bucket
since. A raw row that arrives after its bucket was made (a round that took longer
than ROLLUP_GRACE) has a higher id than the mark's `raw_id`: its host's bucket is
made again, and that hour's hourly bucket too. Pruning deletes by time ranges
(the (taken_at) and (resolution, start) indexes), never past a mark.

Then compaction: a bucket is one row (`Rollup`) only while its span is open.
Once an hour's 5-minute buckets are merged into its hourly one, and once a UTC
day's hourly buckets are all made, every host's buckets of that span go into
one `RollupChunk` row (apps.telemetry.core.packing.pack_chunk: a path's values
side by side across the span compress to about 770 bytes a bucket against 1.3
KB alone, and one row and index entry a span instead of 12 or 24) and their
rows are deleted. Raw rows likewise, an hour per host in one `RawChunk`
(apps.telemetry.core.rawpack, about 230 bytes a sample against 1.9 KB), once
the hour is RAW_LAG behind the 5-minute mark: what reads the newest samples in
SQL (alerts, /metrics, this tick's rollup of raw rows) reads rows. The tick
that merged an hour (the heaviest) leaves that hour to the next ticks. A mark
per kind (`compacted_to`, and `compacted_host` inside a span) says how far. The
one span waiting (the steady state) is compacted a slice of the fleet per
tick (_SLICES), so an hour's work is spread over the hour's ticks and a day's
over most of the day's, and the tick after midnight is no heavier than the one
after any hour; a backlog (rows written before chunks existed, a stopped
beat) goes oldest first, batch after batch while _COMPACT_SHARE of the rollup
interval lasts, never in one long tick, and is read as it is until then. A row made or written
late for a span already compacted stays a row: readers take a rollup row over
its chunk's bucket (`buckets`) and read raw rows beside chunks (`samples`).
Chunks are pruned whole: hourly buckets up to a day past their retention, raw
samples up to 55 minutes.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Min, QuerySet, TextField
from django.db.models.functions import Cast

from apps.fleet.models import Host
from apps.telemetry import store
from apps.telemetry.core import packing, rawpack, rollup
from apps.telemetry.core.rollup import FIVE_MINUTES, HOUR, Retention
from apps.telemetry.models import RawChunk, RawSample, Rollup, RollupChunk, RollupMark

FIVE, HOURLY = Rollup.Resolution.FIVE_MINUTE.value, Rollup.Resolution.HOURLY.value
# A sample is stamped when its answer arrives and written when the whole round
# ends (every host answered or timed out): rollups stay this far behind, so a
# bucket is never closed before its last sample is in.
ROLLUP_GRACE = timedelta(minutes=5)
# Raw rows are read this much at a time (ordered by host, so one host's are together).
_CHUNK = timedelta(minutes=15)
_FETCH = 2000
DAY = timedelta(days=1)
# The span of one RollupChunk row, by resolution; and how many spans a tick compacts
# at most (a day of hours, a week of days: the catch-up after an upgrade is spread).
# Raw rows' compaction has a mark of its own, and stays this far behind the 5-minute
# mark: the last hours stay rows for what reads the newest samples in SQL (alerts,
# /metrics, the tick's own rollup, a sample written late).
RAW = "rw"
RAW_LAG = HOUR
SPANS = {FIVE: HOUR, HOURLY: DAY, RAW: HOUR}
_COMPACT_PER_TICK = {FIVE: 24, HOURLY: 7, RAW: 24}
# A tick compacts another batch of hosts only within this share of the rollup interval
# (one batch at least): a big fleet's day, or its rows from before chunks, take more
# ticks, never one long one.
_COMPACT_SHARE = 0.05
# A span is compacted a slice of the fleet at a time (at least _MIN_BATCH hosts): when
# it is the only one waiting (the steady state), one batch a tick. An hour (5-minute
# buckets, raw samples) in tenths, spread over the hour's ticks; a day of hourly
# buckets in 240ths, spread over the day's: at 10,000 hosts a tenth of the fleet's
# day (24 buckets a host) added to the tick after midnight 2.4 s on top of the
# hour's two batches, while the day has 288 ticks to do it in.
_SLICES = {FIVE: 10, RAW: 10, HOURLY: 240}
_MIN_BATCH = 20


def retention() -> Retention:
    pozol = settings.POZOL
    return Retention(raw=timedelta(hours=pozol["TELEMETRY_RAW_HOURS"]),
                     five_minute=timedelta(days=pozol["TELEMETRY_FIVE_MINUTE_DAYS"]),
                     hourly=timedelta(days=pozol["TELEMETRY_HOURLY_DAYS"]))


@dataclass(frozen=True)
class Maintained:
    five_minute: int  # rollup rows made
    hourly: int
    pruned: int  # rows deleted, every resolution (a chunk is one)
    compacted: int = 0  # chunks written


def marks() -> dict[str, datetime | None]:
    return dict(RollupMark.objects.values_list("resolution", "rolled_to"))


def maintain(now: datetime) -> Maintained:
    """Roll closed buckets up, then delete what is past its retention."""
    settled = now - ROLLUP_GRACE
    with transaction.atomic():
        five = _mark(FIVE)
        hourly = _mark(HOURLY)
        raw = _mark(RAW)
        made_5m, touched = _roll_up_raw(five, rollup.closed_before(settled, FIVE_MINUTES))
        made_1h = _roll_up_hourly(hourly, rollup.closed_before(settled, HOUR), touched)
        chunks = 0
        if hourly.rolled_to is not None:  # a span is compacted once its buckets are made
            # ... but not by the tick that merged an hour (the heaviest): the next one,
            # which makes a 5-minute bucket only, compacts it.
            ready = hourly.rolled_to - (HOUR if made_1h else timedelta(0))
            budget = time.monotonic() + _COMPACT_SHARE * settings.POZOL[
                "TELEMETRY_ROLLUP_INTERVAL"]
            chunks = compact(five, rollup.bucket_start(ready, HOUR), budget)
            if not _spent(budget):
                chunks += compact(hourly, rollup.bucket_start(ready, DAY), budget)
            if five.rolled_to is not None and not _spent(budget):
                chunks += compact(raw, rollup.bucket_start(
                    min(ready, five.rolled_to) - RAW_LAG, HOUR), budget)
    return Maintained(made_5m, made_1h, prune(now), chunks)


def _mark(resolution: str) -> RollupMark:
    RollupMark.objects.get_or_create(resolution=resolution)
    return RollupMark.objects.select_for_update().get(resolution=resolution)


# -- 5-minute buckets from raw rows ------------------------------------------------------

def _roll_up_raw(mark: RollupMark, until: datetime) -> tuple[int, set[tuple[int, datetime]]]:
    """Buckets [mark, until) of every host, and those made again for late rows; returns
    how many, and the (host, hour) of late ones the hourly mark has passed."""
    newest = RawSample.objects.aggregate(id=Max("id"))["id"] or 0
    since = mark.rolled_to
    late: set[tuple[int, datetime]] = set()
    if since is None:
        first = min((at for at in (RawSample.objects.aggregate(at=Min("taken_at"))["at"],
                                   RawChunk.objects.aggregate(at=Min("start"))["at"])
                     if at is not None), default=None)
        since = rollup.bucket_start(first, FIVE_MINUTES) if first else until
    else:
        late = {(host, rollup.bucket_start(at, FIVE_MINUTES)) for host, at in
                RawSample.objects.filter(id__gt=mark.raw_id, id__lte=newest, taken_at__lt=since)
                .values_list("host_id", "taken_at")}
    made = sum(store.save_rollups(FIVE, window) for window in _rolled_windows(since, until))
    made += store.save_rollups(FIVE, list(_rolled_again(late)))
    mark.rolled_to = max(since, until)
    mark.raw_id = newest
    mark.save()
    return made, {(host, rollup.bucket_start(start, HOUR)) for host, start in late}


def _rolled_windows(since: datetime,
                    until: datetime) -> Iterator[list[tuple[int, packing.Bucket]]]:
    """Every host's buckets, a window at a time (a tick that catches up on days of
    samples holds one window's in memory, not all)."""
    start = since
    while start < until:
        end = min(rollup.bucket_start(start, _CHUNK) + _CHUNK, until)
        yield list(_by_host(samples(start, end)))
        start = end


def _rolled_again(late: set[tuple[int, datetime]]) -> Iterator[tuple[int, packing.Bucket]]:
    by_bucket: dict[datetime, list[int]] = {}
    for host, start in late:
        by_bucket.setdefault(start, []).append(host)
    for start, hosts in sorted(by_bucket.items()):
        yield from _by_host(samples(start, start + FIVE_MINUTES, hosts))


def _by_host(by_host: Iterable[tuple[int, list[tuple[datetime, dict]]]],
             ) -> Iterator[tuple[int, packing.Bucket]]:
    for host, rows in by_host:
        for bucket in packing.roll_up(rows, FIVE_MINUTES):
            yield host, bucket


def samples(start: datetime, end: datetime, hosts: list[int] | None = None, *,
            after_host: int = 0, missing: bool = False) -> Iterator[tuple[int, list[tuple]]]:
    """Every host's (or `hosts'`) raw samples taken in [start, end), host after host,
    each host's in time order: (taken at, values), and `missing` too if asked; from
    chunks (closed hours) and rows."""
    chunks = RawChunk.objects.filter(start__gt=start - SPANS[RAW], start__lt=end)
    rows = RawSample.objects.filter(taken_at__gte=start, taken_at__lt=end)
    chunks, rows = (_of_hosts(found, hosts, after_host) for found in (chunks, rows))
    chunked = _grouped(chunks.order_by("host_id", "start")
                       .values_list("host_id", "start", "layout_id", "data")
                       .iterator(chunk_size=_FETCH // 10))
    # The values as text, parsed by store.json_value rather than Django's json.loads.
    single = _grouped(rows.order_by("host_id", "taken_at")
                      .values_list("host_id", "taken_at", Cast("values", TextField()),
                                   "missing")
                      .iterator(chunk_size=_FETCH))
    for host, in_chunks, in_rows in _joined(chunked, single):
        found = [sample for _, at, layout, data in in_chunks
                 for sample in store.raw_samples(at, layout, data) if start <= sample[0] < end]
        found += [(at, store.json_value(text), taken) for _, at, text, taken in in_rows]
        found.sort(key=lambda sample: sample[0])
        yield host, [sample if missing else sample[:2] for sample in found]


# -- hourly buckets from 5-minute ones ------------------------------------------------------

def _roll_up_hourly(mark: RollupMark, until: datetime,
                    touched: set[tuple[int, datetime]]) -> int:
    since = mark.rolled_to
    if since is None:
        first = Rollup.objects.filter(resolution=FIVE).aggregate(at=Min("start"))["at"]
        since = rollup.bucket_start(first, HOUR) if first else until
    again = {(host, hour) for host, hour in touched if hour < since}
    made = sum(store.save_rollups(HOURLY, window) for window in _merged_windows(since, until))
    made += store.save_rollups(HOURLY, list(_merged_again(again)))
    mark.rolled_to = max(since, until)
    mark.save()
    return made


def _merged_windows(since: datetime,
                    until: datetime) -> Iterator[list[tuple[int, packing.Bucket]]]:
    start = since
    while start < until:
        end = min(start + HOUR, until)
        yield list(_merged(buckets(FIVE, start, end)))
        start = end


def _merged_again(again: set[tuple[int, datetime]]) -> Iterator[tuple[int, packing.Bucket]]:
    by_hour: dict[datetime, list[int]] = {}
    for host, hour in again:
        by_hour.setdefault(hour, []).append(host)
    for hour, hosts in sorted(by_hour.items()):
        yield from _merged(buckets(FIVE, hour, hour + HOUR, hosts))


def _merged(by_host: Iterable[tuple[int, list[packing.Bucket]]],
            ) -> Iterator[tuple[int, packing.Bucket]]:
    for host, parts in by_host:
        for bucket in packing.merge(parts, HOUR):
            yield host, bucket


# -- stored buckets: rows and chunks --------------------------------------------------------

def buckets(resolution: str, start: datetime, end: datetime, hosts: list[int] | None = None,
            *, after_host: int = 0) -> Iterator[tuple[int, list[packing.Bucket]]]:
    """Every host's (or `hosts`') buckets starting in [start, end), host after host, each
    host's in time order: those of chunks and of rows, a row taken over a chunk's bucket
    of the same start (it was made again later). One host's are in memory at a time."""
    span = SPANS[resolution]
    chunks = RollupChunk.objects.filter(resolution=resolution, start__gt=start - span,
                                        start__lt=end)
    rows = Rollup.objects.filter(resolution=resolution, start__gte=start, start__lt=end)
    chunks, rows = (_of_hosts(found, hosts, after_host) for found in (chunks, rows))
    chunked = _grouped(chunks.order_by("host_id", "start")
                       .values_list("host_id", "start", "layout_id", "data")
                       .iterator(chunk_size=_FETCH // 10))
    single = _grouped(rows.order_by("host_id", "start")
                      .values_list("host_id", "start", "values", "layout_id", "data")
                      .iterator(chunk_size=_FETCH))
    for host, in_chunks, in_rows in _joined(chunked, single):
        found = {b.start: b for _, at, layout, data in in_chunks
                 for b in store.chunk_buckets(at, layout, data) if start <= b.start < end}
        found.update((at, store.bucket(at, values, layout, data))
                     for _, at, values, layout, data in in_rows)
        yield host, [found[at] for at in sorted(found)]


def _of_hosts(rows: QuerySet, hosts: Sequence[int] | None, after_host: int) -> QuerySet:
    """`rows` of `hosts` only (None: every host), and of hosts after `after_host`."""
    if hosts is not None:
        rows = rows.filter(host_id__in=hosts)
    return rows.filter(host_id__gt=after_host) if after_host else rows


def _grouped(rows: Iterator[tuple]) -> Iterator[tuple[int, list[tuple]]]:
    for host, group in itertools.groupby(rows, key=lambda row: row[0]):
        yield host, list(group)


def _joined(a: Iterator[tuple[int, list]], b: Iterator[tuple[int, list]],
            ) -> Iterator[tuple[int, list, list]]:
    """Two streams of (host, rows) in host order, as (host, a's rows, b's rows)."""
    x, y = next(a, None), next(b, None)
    while x is not None or y is not None:
        if y is None or (x is not None and x[0] < y[0]):
            yield x[0], x[1], []
            x = next(a, None)
        elif x is None or y[0] < x[0]:
            yield y[0], [], y[1]
            y = next(b, None)
        else:
            yield x[0], x[1], y[1]
            x, y = next(a, None), next(b, None)


# -- compaction -------------------------------------------------------------------------------

def compact(mark: RollupMark, until: datetime, budget: float | None = None) -> int:
    """The mark's resolution's spans before `until` (a span start) put into chunks, the
    oldest first, hosts in batches (_batch): one batch when the span is the only one
    waiting, else at most _COMPACT_PER_TICK spans and no batch begun after `budget`
    (time.monotonic()) but the first; the mark says where the next call goes on (a
    span, and the last host done in it). Returns the chunks written."""
    resolution, span = mark.resolution, SPANS[mark.resolution]
    start, after = mark.compacted_to, mark.compacted_host
    if start is None:
        rows = (RawSample.objects.aggregate(at=Min("taken_at")) if resolution == RAW else
                Rollup.objects.filter(resolution=resolution).aggregate(at=Min("start")))
        start, after = (rollup.bucket_start(rows["at"], span) if rows["at"] else until), 0
    made, size = 0, _batch(resolution)
    for n in range(_COMPACT_PER_TICK[resolution]):
        if start + span > until or (n and _spent(budget)):
            break
        alone = start + 2 * span > until
        chunks, stopped_at = _compact_span(resolution, start, start + span, after, size,
                                           None if alone else budget, alone)
        made += chunks
        if stopped_at is not None:  # a batch done, more of the span for the next tick
            after = stopped_at
            break
        start, after = start + span, 0
    if (start, after) != (mark.compacted_to, mark.compacted_host):
        mark.compacted_to, mark.compacted_host = start, after
        mark.save(update_fields=["compacted_to", "compacted_host"])
    return made


def _spent(budget: float | None) -> bool:
    return budget is not None and time.monotonic() > budget


def _batch(resolution: str) -> int:
    return max(_MIN_BATCH, -(-Host.objects.count() // _SLICES[resolution]))


def _compact_span(resolution: str, start: datetime, end: datetime, after_host: int,
                  size: int, budget: float | None, one: bool) -> tuple[int, int | None]:
    """The span's hosts after `after_host`, `size` at a time: each host's buckets (raw
    samples) as one chunk (a chunk there already, of an interrupted run, read in and
    replaced), then their rows deleted; after `one` batch, or once past `budget`, the
    rest is left. Returns the chunks written, and the last host done when some are
    left (None when the span is done)."""
    made, packed = 0, []
    found_by_host = (samples(start, end, after_host=after_host, missing=True)
                     if resolution == RAW else
                     buckets(resolution, start, end, after_host=after_host))
    for host, found in found_by_host:
        if len(packed) >= size:  # a full batch, and more hosts after it
            made += _written(resolution, start, end, packed)
            last, packed = packed[-1][0], []
            if one or _spent(budget):
                return made, last
        chunk = _packed(resolution, start, found)
        if chunk is not None:
            packed.append((host, start, *chunk))
    if packed:
        made += _written(resolution, start, end, packed)
    return made, None


def _packed(resolution: str, start: datetime, found: list) -> tuple | None:
    if not found:
        return None
    if resolution != RAW:
        return packing.pack_chunk(start, found)
    try:
        return rawpack.pack_samples(start, found)
    except packing.PackingError:  # a row of another shape than numbers: it stays a row
        return None


def _written(resolution: str, start: datetime, end: datetime, packed: list) -> int:
    """A batch of hosts' chunks saved, and those hosts' rows of the span deleted."""
    hosts = [host for host, *_ in packed]
    if resolution == RAW:
        made = store.save_raw_chunks(packed)
        RawSample.objects.filter(taken_at__gte=start, taken_at__lt=end,
                                 host_id__in=hosts).delete()
        return made
    made = store.save_chunks(resolution, packed)
    Rollup.objects.filter(resolution=resolution, start__gte=start, start__lt=end,
                          host_id__in=hosts).delete()
    return made


# -- retention --------------------------------------------------------------------------------

def prune(now: datetime) -> int:
    cut = rollup.cutoffs(now, retention())
    rolled = marks()
    deleted = 0
    # Raw rows go only once rolled up, 5-minute ones once merged into their hour.
    if rolled.get(FIVE):
        raw = min(cut.raw, rolled[FIVE])
        deleted += RawSample.objects.filter(taken_at__lt=raw).delete()[0]
        # An hour's chunk goes once all of it is past: up to 55 minutes kept beyond.
        deleted += RawChunk.objects.filter(start__lte=raw - SPANS[RAW]).delete()[0]
    if rolled.get(HOURLY):
        five = min(cut.five_minute, rolled[HOURLY])
        deleted += Rollup.objects.filter(resolution=FIVE, start__lt=five).delete()[0]
        deleted += RollupChunk.objects.filter(resolution=FIVE,
                                              start__lte=five - SPANS[FIVE]).delete()[0]
    deleted += Rollup.objects.filter(resolution=HOURLY, start__lt=cut.hourly).delete()[0]
    # A day's chunk goes once all of it is past: up to 23 hours kept beyond the retention.
    deleted += RollupChunk.objects.filter(resolution=HOURLY,
                                          start__lte=cut.hourly - SPANS[HOURLY]).delete()[0]
    return deleted


# With the VictoriaMetrics store the database keeps raw rows only for what reads the
# newest two samples (/metrics' rates over its last three intervals, the ARC alert's
# last half hour of which two rows suffice): at least this long, or 5 intervals.
RAW_TAIL = timedelta(minutes=10)


def prune_tail(now: datetime, interval: timedelta) -> int:
    """Raw rows older than the tail deleted through the time index; nothing is rolled
    up or compacted (VictoriaMetrics keeps the history)."""
    keep = max(RAW_TAIL, 5 * interval)
    return RawSample.objects.filter(taken_at__lt=now - keep).delete()[0]
