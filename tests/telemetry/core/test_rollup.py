"""Downsampling and retention: table-driven cases and hypothesis properties."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.telemetry.core.rollup import (
    FIVE_MINUTES,
    HOUR,
    Point,
    Retention,
    TelemetryError,
    bucket_start,
    closed_before,
    counter_rate,
    cutoffs,
    merge_counters,
    merge_gauges,
    rollup_counter,
    rollup_gauge,
)

T = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T + timedelta(minutes=minutes)


def test_gauge_buckets_min_max_avg_and_gaps_stay_gaps():
    points = [Point(at(0), 10), Point(at(1), 30), Point(at(4.99), 20), Point(at(5), None),
              Point(at(6), None), Point(at(11), 7)]
    buckets = rollup_gauge(points, FIVE_MINUTES)
    assert [(b.start, b.min, b.max, b.avg, b.count) for b in buckets] == [
        (at(0), 10, 30, 20, 3), (at(10), 7, 7, 7, 1)]  # 12:05 had nothing known: no bucket


def test_counter_buckets_keep_first_and_last_raw_values():
    points = [Point(at(1), 100), Point(at(2), 160), Point(at(6), 400), Point(at(9), 460)]
    first, second = rollup_counter(points, FIVE_MINUTES)
    assert (first.first, first.last, first.last_at, first.reset) == (100, 160, at(2), False)
    assert (second.first, second.last, second.count) == (400, 460, 2)
    assert counter_rate(first, second) == pytest.approx(300 / (7 * 60))


def test_a_reset_inside_a_bucket_or_between_buckets_makes_the_rate_unknown():
    inside = rollup_counter([Point(at(0), 500), Point(at(6), 900), Point(at(7), 3),
                             Point(at(8), 950)], FIVE_MINUTES)
    assert inside[1].reset and counter_rate(inside[0], inside[1]) is None
    between = rollup_counter([Point(at(0), 500), Point(at(6), 3), Point(at(8), 900)],
                             FIVE_MINUTES)
    assert not between[1].reset and counter_rate(between[0], between[1]) is None


def test_buckets_are_aligned_on_the_epoch_in_utc():
    local = datetime(2026, 11, 23, 13, 7, 30, tzinfo=ZoneInfo("Europe/Paris"))
    assert bucket_start(local, FIVE_MINUTES) == datetime(2026, 11, 23, 12, 5, tzinfo=UTC)
    assert bucket_start(local, HOUR) == datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert closed_before(at(59.9), HOUR) == T


def test_naive_times_and_odd_widths_are_refused():
    with pytest.raises(TelemetryError):
        bucket_start(datetime(2026, 1, 1), HOUR)
    with pytest.raises(TelemetryError):
        rollup_gauge([Point(T, 1)], timedelta(minutes=7))
    with pytest.raises(TelemetryError):
        rollup_gauge([Point(T, 1)], timedelta(0))


@pytest.mark.parametrize(("now", "raw", "five", "hourly"), [
    (datetime(2026, 11, 23, 12, 7, 31, tzinfo=UTC), datetime(2026, 11, 21, 12, 5, tzinfo=UTC),
     datetime(2026, 10, 24, 12, 0, tzinfo=UTC), datetime(2025, 10, 19, 12, 0, tzinfo=UTC)),
    (datetime(2026, 3, 1, 0, 0, tzinfo=UTC), datetime(2026, 2, 27, 0, 0, tzinfo=UTC),
     datetime(2026, 1, 30, 0, 0, tzinfo=UTC), datetime(2025, 1, 25, 0, 0, tzinfo=UTC)),
])
def test_default_retention_cutoffs(now, raw, five, hourly):
    assert cutoffs(now) == (cut := cutoffs(now, Retention()))
    assert (cut.raw, cut.five_minute, cut.hourly) == (raw, five, hourly)


def test_configured_retention():
    cut = cutoffs(at(2), Retention(raw=timedelta(hours=6), five_minute=timedelta(days=7),
                                   hourly=timedelta(days=90)))
    assert cut.raw == T - timedelta(hours=6)
    assert cut.five_minute == T - timedelta(days=7)
    assert cut.hourly == T - timedelta(days=90)


@pytest.mark.parametrize("values", [
    {"raw": timedelta(minutes=30)},
    {"raw": timedelta(days=40)},  # longer than the 5-minute rollups are kept
    {"five_minute": timedelta(days=500)},
    {"hourly": 400},
])
def test_bad_retention_is_refused_with_the_field(values):
    with pytest.raises(TelemetryError) as refused:
        Retention(**values)
    assert refused.value.field in {"raw", "five_minute", "hourly"}


# -- properties -----------------------------------------------------------------------------

offsets = st.lists(st.tuples(st.integers(min_value=0, max_value=3 * 86_400 - 1),
                             st.one_of(st.none(), st.integers(-10**6, 10**6))),
                   max_size=200)


@given(offsets)
def test_hourly_from_five_minute_buckets_equals_hourly_from_raw(raw):
    points = [Point(T + timedelta(seconds=s), v) for s, v in raw]
    direct = rollup_gauge(points, HOUR)
    merged = merge_gauges(rollup_gauge(points, FIVE_MINUTES), HOUR)
    assert [(b.start, b.min, b.max, b.count) for b in direct] == [
        (b.start, b.min, b.max, b.count) for b in merged]
    for d, m in zip(direct, merged, strict=True):
        assert d.avg == pytest.approx(m.avg)
        assert d.min <= d.avg <= d.max


@given(offsets)
def test_every_known_point_lands_in_exactly_one_aligned_bucket(raw):
    points = [Point(T + timedelta(seconds=s), v) for s, v in raw]
    buckets = rollup_gauge(points, FIVE_MINUTES)
    assert sum(b.count for b in buckets) == sum(1 for p in points if p.value is not None)
    assert all(bucket_start(b.start, FIVE_MINUTES) == b.start for b in buckets)
    assert [b.start for b in buckets] == sorted({b.start for b in buckets})


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=2, max_size=300),
       st.integers(min_value=1, max_value=120))
def test_counter_rollups_keep_rates_right_and_merge_like_raw(steps, every):
    # A monotonic counter sampled every `every` seconds.
    values = [sum(steps[:i + 1]) for i in range(len(steps))]
    points = [Point(T + timedelta(seconds=i * every), v) for i, v in enumerate(values)]
    fine = rollup_counter(points, FIVE_MINUTES)
    assert not any(b.reset for b in fine)
    for a, b in zip(fine, fine[1:], strict=False):
        expected = (b.last - a.last) / (b.last_at - a.last_at).total_seconds()
        assert counter_rate(a, b) == pytest.approx(expected)
    assert merge_counters(fine, HOUR) == rollup_counter(points, HOUR)


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=2, max_size=100))
def test_any_decrease_between_two_hourly_buckets_makes_their_rate_unknown(values):
    points = [Point(T + timedelta(minutes=20 * i), v) for i, v in enumerate(values)]
    hourly = rollup_counter(points, HOUR)
    for a, b in zip(hourly, hourly[1:], strict=False):
        raw = [a.last, *[p.value for p in points if bucket_start(p.at, HOUR) == b.start]]
        decreased = any(y < x for x, y in zip(raw, raw[1:], strict=False))
        assert (counter_rate(a, b) is None) == decreased
