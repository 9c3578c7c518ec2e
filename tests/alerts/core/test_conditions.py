from datetime import UTC, datetime, timedelta

import pytest

from apps.alerts.alert_kinds import ARC_HIT_RATE, OPERATION_FAILED, SCRUB_OVERDUE
from apps.alerts.core import conditions
from apps.alerts.core.conditions import ArcCounters
from apps.fleet.alert_kinds import HOST_KEY_CHANGED, POOL_CAPACITY, UNREACHABLE

NOW = datetime(2026, 11, 24, 12, tzinfo=UTC)


def test_the_hit_rate_is_of_the_interval_not_since_boot():
    before, after = ArcCounters(1_000_000, 10), ArcCounters(1_000_600, 410)
    assert conditions.arc_hit_rate(before, after) == pytest.approx(60.0)


def test_a_reset_or_an_idle_arc_gives_no_rate():
    assert conditions.arc_hit_rate(ArcCounters(5000, 500), ArcCounters(10, 1)) is None  # reboot
    assert conditions.arc_hit_rate(ArcCounters(5000, 500), ArcCounters(5050, 520)) is None  # idle


def test_hysteresis_fires_under_the_threshold_and_clears_only_above_the_margin():
    assert conditions.arc_message(79.0, 80, 5, firing=False) == "ARC hit rate 79.0% is under 80%"
    assert conditions.arc_message(81.0, 80, 5, firing=False) is None
    assert conditions.arc_message(83.0, 80, 5, firing=True)  # still firing inside the band
    assert conditions.arc_message(85.5, 80, 5, firing=True) is None
    assert conditions.arc_message(None, 80, 5, firing=True) is False  # no data: leave it


@pytest.mark.parametrize(("kind", "value", "why"), [
    (POOL_CAPACITY, None, "a threshold in % is required"),
    (POOL_CAPACITY, 0, "must be between 1 and 99 %"),
    (POOL_CAPACITY, 120, "must be between 1 and 99 %"),
    (ARC_HIT_RATE, -1, "must be between 0 and 100 %"),
    (SCRUB_OVERDUE, 0.5, "must be between 1 and 3650 days"),
    (HOST_KEY_CHANGED, 3, "this rule has no threshold"),
])
def test_thresholds_out_of_range_are_refused(kind, value, why):
    assert conditions.check_threshold(kind, value) == why


def test_thresholds_in_range_pass():
    assert conditions.check_threshold(POOL_CAPACITY, 90) is None
    assert conditions.check_threshold(UNREACHABLE, None) is None
    assert conditions.check_hysteresis(ARC_HIT_RATE, 80, -1) == "must be 0 or more"
    assert conditions.check_hysteresis(OPERATION_FAILED, None, 2) == "this rule has no threshold"


def test_pool_health_names_pools_not_online_and_their_errors():
    pools = {"tank": {"health": "ONLINE", "checksum_errors": 0},
             "fast": {"health": "DEGRADED", "checksum_errors": 3, "read_errors": 1}}
    assert conditions.pool_health_message(pools) == (
        "pool fast is DEGRADED; pool fast has 3 checksum errors, 1 read errors")
    assert conditions.pool_health_message({"tank": {"health": "ONLINE"}}) is None


def test_scrub_overdue_counts_a_never_scrubbed_pool_from_when_the_host_was_known():
    old = {"tank": {"scrub": {"state": "finished", "ended": "2026-09-01T03:00:00"}}}
    never = {"tank": {"scrub": {"state": "none", "ended": None}}}
    running = {"tank": {"scrub": {"state": "in progress", "ended": None}}}
    assert conditions.scrub_message(old, NOW, 35, NOW - timedelta(days=400)) == (
        "pool tank last scrubbed 84 days ago")
    assert conditions.scrub_message(never, NOW, 35, NOW - timedelta(days=2)) is None
    assert conditions.scrub_message(never, NOW, 35, NOW - timedelta(days=36)) == (
        "pool tank has no finished scrub")
    assert conditions.scrub_message(running, NOW, 35, NOW - timedelta(days=400)) is None
