"""Downsampling and retention: pure arithmetic on points, buckets and times.

Raw samples are kept for 48 hours, 5-minute rollups for 30 days and hourly
ones for 400 days by default (issue 11; the operator may change them).

- A gauge (ARC size, capacity, Dirty) rolls up into min, max and average.
- A counter (ARC hits, xact_commit) rolls up into its first and last raw
  values and their times, so the rate between two buckets is computed as
  between two samples; a decrease inside a bucket, or between one bucket's
  last value and the next one's first, marks the bucket `reset` and the rate
  across it unknown (a reboot is not drawn as a spike, even averaged).
- Unknown values (None) are skipped; a bucket with no known value is not
  made, so a gap in collection stays a gap.

Buckets are aligned on the Unix epoch in UTC (every 5-minute bucket lies in
exactly one hour), so hourly rollups from 5-minute ones equal hourly rollups
from the raw points. Only closed buckets (ending at or before `now`) are made
by a tick: `closed_before(now, width)` is where a rollup stops.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import groupby

FIVE_MINUTES = timedelta(minutes=5)
HOUR = timedelta(hours=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class TelemetryError(ValueError):
    """An input a person must correct; `field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Point:
    at: datetime
    value: float | None


@dataclass(frozen=True)
class GaugeBucket:
    start: datetime
    min: float
    max: float
    avg: float
    count: int  # known values behind it: weights the average when buckets merge


@dataclass(frozen=True)
class CounterBucket:
    start: datetime
    first_at: datetime
    first: float
    last_at: datetime
    last: float
    reset: bool  # the counter went down inside the bucket
    count: int


def bucket_start(at: datetime, width: timedelta) -> datetime:
    _aware(at)
    steps = (at - _EPOCH) // width
    return _EPOCH + steps * width


def closed_before(now: datetime, width: timedelta) -> datetime:
    """Buckets starting before this have ended: they can be rolled up for good."""
    return bucket_start(now, width)


def rollup_gauge(points: Iterable[Point], width: timedelta) -> list[GaugeBucket]:
    buckets = []
    for start, group in _by_bucket(points, width):
        values = [p.value for p in group]
        buckets.append(GaugeBucket(start, min(values), max(values),  # type: ignore[type-var]
                                   sum(values) / len(values), len(values)))  # type: ignore[arg-type]
    return buckets


def rollup_counter(points: Iterable[Point], width: timedelta) -> list[CounterBucket]:
    buckets = []
    for start, group in _by_bucket(points, width):
        values = [p.value for p in group]
        reset = any(b < a for a, b in zip(values, values[1:], strict=False))  # type: ignore[operator]
        buckets.append(CounterBucket(start, group[0].at, group[0].value,  # type: ignore[arg-type]
                                     group[-1].at, group[-1].value,  # type: ignore[arg-type]
                                     reset, len(group)))
    return buckets


def merge_gauges(buckets: Iterable[GaugeBucket], width: timedelta) -> list[GaugeBucket]:
    """Coarser buckets from finer ones (5-minute -> hourly)."""
    merged = []
    ordered = sorted(buckets, key=lambda b: b.start)
    for start, group in groupby(ordered, key=lambda b: bucket_start(b.start, width)):
        parts = list(group)
        count = sum(b.count for b in parts)
        merged.append(GaugeBucket(start, min(b.min for b in parts), max(b.max for b in parts),
                                  sum(b.avg * b.count for b in parts) / count, count))
    return merged


def merge_counters(buckets: Iterable[CounterBucket], width: timedelta) -> list[CounterBucket]:
    merged = []
    ordered = sorted(buckets, key=lambda b: b.start)
    for start, group in groupby(ordered, key=lambda b: bucket_start(b.start, width)):
        parts = list(group)
        reset = any(b.reset for b in parts) or any(
            b.first < a.last for a, b in zip(parts, parts[1:], strict=False))
        merged.append(CounterBucket(start, parts[0].first_at, parts[0].first, parts[-1].last_at,
                                    parts[-1].last, reset, sum(b.count for b in parts)))
    return merged


def counter_rate(before: CounterBucket, after: CounterBucket) -> float | None:
    """Per second from one bucket's last value to the next one's; None across a reset."""
    seconds = (after.last_at - before.last_at).total_seconds()
    if after.reset or after.first < before.last or after.last < before.last or seconds <= 0:
        return None
    return (after.last - before.last) / seconds


def _by_bucket(points: Iterable[Point], width: timedelta):
    _width(width)
    known = sorted((p for p in points if p.value is not None), key=lambda p: p.at)
    for start, group in groupby(known, key=lambda p: bucket_start(p.at, width)):
        yield start, list(group)


# -- retention ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Retention:
    raw: timedelta = timedelta(hours=48)
    five_minute: timedelta = timedelta(days=30)
    hourly: timedelta = timedelta(days=400)

    def __post_init__(self) -> None:
        for name in ("raw", "five_minute", "hourly"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) or value < HOUR:
                raise TelemetryError(name, "Keep each resolution for at least an hour.")
        if not self.raw <= self.five_minute <= self.hourly:
            raise TelemetryError("five_minute", "Coarser data must be kept at least as long "
                                                "as finer data (raw <= 5-minute <= hourly).")


@dataclass(frozen=True)
class Cutoffs:
    """Delete what is older than these: raw points, 5-minute and hourly buckets."""

    raw: datetime
    five_minute: datetime
    hourly: datetime


def cutoffs(now: datetime, retention: Retention = Retention()) -> Cutoffs:  # noqa: B008
    """Each cut-off aligned down to the bucket its data rolls up into, so raw points
    go only with their whole (closed, rolled-up) 5-minute bucket, and 5-minute
    buckets only with their whole hour; every retention is at least an hour, so
    a cut-off never reaches a bucket still open."""
    _aware(now)
    return Cutoffs(
        raw=bucket_start(now - retention.raw, FIVE_MINUTES),
        five_minute=bucket_start(now - retention.five_minute, HOUR),
        hourly=bucket_start(now - retention.hourly, HOUR),
    )


def _aware(at: datetime) -> None:
    if at.tzinfo is None:
        raise TelemetryError("now", "Times must be timezone-aware.")


def _width(width: timedelta) -> None:
    if width <= timedelta(0) or timedelta(hours=24) % width:
        raise TelemetryError("width", "A bucket width must divide a day evenly.")
