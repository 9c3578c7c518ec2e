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
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Min

from apps.telemetry import store
from apps.telemetry.core import packing, rollup
from apps.telemetry.core.rollup import FIVE_MINUTES, HOUR, Retention
from apps.telemetry.models import RawSample, Rollup, RollupMark

FIVE, HOURLY = Rollup.Resolution.FIVE_MINUTE.value, Rollup.Resolution.HOURLY.value
# A sample is stamped when its answer arrives and written when the whole round
# ends (every host answered or timed out): rollups stay this far behind, so a
# bucket is never closed before its last sample is in.
ROLLUP_GRACE = timedelta(minutes=5)
# Raw rows are read this much at a time (ordered by host, so one host's are together).
_CHUNK = timedelta(minutes=15)
_FETCH = 2000


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


def marks() -> dict[str, datetime | None]:
    return dict(RollupMark.objects.values_list("resolution", "rolled_to"))


def maintain(now: datetime) -> Maintained:
    """Roll closed buckets up, then delete what is past its retention."""
    settled = now - ROLLUP_GRACE
    with transaction.atomic():
        five = _mark(FIVE)
        hourly = _mark(HOURLY)
        made_5m, touched = _roll_up_raw(five, rollup.closed_before(settled, FIVE_MINUTES))
        made_1h = _roll_up_hourly(hourly, rollup.closed_before(settled, HOUR), touched)
    return Maintained(made_5m, made_1h, prune(now))


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
        first = RawSample.objects.aggregate(at=Min("taken_at"))["at"]
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
        rows = (RawSample.objects.filter(taken_at__gte=start, taken_at__lt=end)
                .order_by("host_id", "taken_at").values_list("host_id", "taken_at", "values")
                .iterator(chunk_size=_FETCH))
        yield list(_by_host(rows))
        start = end


def _rolled_again(late: set[tuple[int, datetime]]) -> Iterator[tuple[int, packing.Bucket]]:
    by_bucket: dict[datetime, list[int]] = {}
    for host, start in late:
        by_bucket.setdefault(start, []).append(host)
    for start, hosts in sorted(by_bucket.items()):
        rows = (RawSample.objects.filter(host_id__in=hosts, taken_at__gte=start,
                                         taken_at__lt=start + FIVE_MINUTES)
                .order_by("host_id", "taken_at").values_list("host_id", "taken_at", "values"))
        yield from _by_host(rows.iterator(chunk_size=_FETCH))


def _by_host(rows) -> Iterator[tuple[int, packing.Bucket]]:
    for host, group in itertools.groupby(rows, key=lambda row: row[0]):
        for bucket in packing.roll_up([(at, values) for _, at, values in group], FIVE_MINUTES):
            yield host, bucket


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
        yield list(_merged(Rollup.objects.filter(resolution=FIVE, start__gte=start,
                                                 start__lt=end)))
        start = end


def _merged_again(again: set[tuple[int, datetime]]) -> Iterator[tuple[int, packing.Bucket]]:
    by_hour: dict[datetime, list[int]] = {}
    for host, hour in again:
        by_hour.setdefault(hour, []).append(host)
    for hour, hosts in sorted(by_hour.items()):
        yield from _merged(Rollup.objects.filter(resolution=FIVE, host_id__in=hosts,
                                                 start__gte=hour, start__lt=hour + HOUR))


def _merged(rows) -> Iterator[tuple[int, packing.Bucket]]:
    ordered = (rows.order_by("host_id", "start")
               .values_list("host_id", "start", "values", "layout_id", "data")
               .iterator(chunk_size=_FETCH))
    for host, group in itertools.groupby(ordered, key=lambda row: row[0]):
        parts = [store.bucket(start, values, layout, data)
                 for _, start, values, layout, data in group]
        for bucket in packing.merge(parts, HOUR):
            yield host, bucket


# -- retention --------------------------------------------------------------------------------

def prune(now: datetime) -> int:
    cut = rollup.cutoffs(now, retention())
    rolled = marks()
    deleted = 0
    # Raw rows go only once rolled up, 5-minute ones once merged into their hour.
    if rolled.get(FIVE):
        deleted += RawSample.objects.filter(
            taken_at__lt=min(cut.raw, rolled[FIVE])).delete()[0]
    if rolled.get(HOURLY):
        deleted += Rollup.objects.filter(
            resolution=FIVE, start__lt=min(cut.five_minute, rolled[HOURLY])).delete()[0]
    deleted += Rollup.objects.filter(resolution=HOURLY, start__lt=cut.hourly).delete()[0]
    return deleted
