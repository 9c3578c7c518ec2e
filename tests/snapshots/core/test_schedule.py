"""A period is due once per UTC slot, and one snapshot serves every period due with it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from apps.snapshots.core.policy import Period, Policy, SnapshotInfo
from apps.snapshots.core.schedule import due, slot_start, snapshot_name
from tests.snapshots.core.snaps import T0, hand_made, ours

EVERYTHING = Policy("p", frequently=4, frequent_minutes=15, hourly=24, daily=7, weekly=4,
                    monthly=12)
WEDNESDAY = datetime(2026, 3, 18, 13, 47, 12, 5, tzinfo=UTC)


@pytest.mark.parametrize(("period", "start"), [
    (Period.FREQUENTLY, datetime(2026, 3, 18, 13, 45, tzinfo=UTC)),
    (Period.HOURLY, datetime(2026, 3, 18, 13, 0, tzinfo=UTC)),
    (Period.DAILY, datetime(2026, 3, 18, 0, 0, tzinfo=UTC)),
    (Period.WEEKLY, datetime(2026, 3, 16, 0, 0, tzinfo=UTC)),  # Monday
    (Period.MONTHLY, datetime(2026, 3, 1, 0, 0, tzinfo=UTC)),
])
def test_slots_start_on_utc_boundaries(period, start):
    assert slot_start(EVERYTHING, period, WEDNESDAY) == start


def test_slot_start_reads_other_zones_in_utc():
    from zoneinfo import ZoneInfo

    tokyo = datetime(2026, 3, 19, 0, 30, tzinfo=ZoneInfo("Asia/Tokyo"))  # 15:30 UTC on the 18th
    assert slot_start(EVERYTHING, Period.DAILY, tokyo) == datetime(2026, 3, 18, tzinfo=UTC)


def test_with_no_snapshot_every_kept_period_is_due_in_one_snapshot():
    result = due(Policy("p", hourly=24, daily=7), [], WEDNESDAY)
    assert result.periods == (Period.HOURLY, Period.DAILY)
    assert result.snapshot is not None
    assert result.snapshot.name == "pozol_p_20260318T134712Z"
    assert result.snapshot.properties() == {
        "pozol:owner": "pozol", "pozol:policy": "p", "pozol:taken": "20260318T134712Z",
        "pozol:periods": "hourly,daily"}


def test_a_policy_that_keeps_nothing_is_never_due():
    result = due(Policy("p"), [], WEDNESDAY)
    assert result.periods == ()
    assert result.snapshot is None


def test_hourly_is_due_at_each_new_hour_and_not_again_within_it():
    policy = Policy("p", hourly=24, daily=7)
    taken = ours("tank/a", T0 + timedelta(hours=5, seconds=3))
    assert due(policy, [taken], T0 + timedelta(hours=5, minutes=59)).periods == ()
    assert due(policy, [taken], T0 + timedelta(hours=6)).periods == (Period.HOURLY,)


def test_on_monday_midnight_one_snapshot_is_hourly_daily_and_weekly():
    policy = Policy("p", hourly=24, daily=7, weekly=4, monthly=12)
    sunday = ours("tank/a", T0 - timedelta(hours=1))
    result = due(policy, [sunday], T0)
    assert result.periods == (Period.HOURLY, Period.DAILY, Period.WEEKLY)
    assert result.snapshot.properties()["pozol:periods"] == "hourly,daily,weekly"


def test_frequent_slots_follow_the_period_in_minutes():
    policy = Policy("p", frequently=4, frequent_minutes=15)
    taken = ours("tank/a", T0 + timedelta(minutes=15))
    assert due(policy, [taken], T0 + timedelta(minutes=29, seconds=59)).periods == ()
    assert due(policy, [taken], T0 + timedelta(minutes=30)).periods == (Period.FREQUENTLY,)


def test_names_are_utc_and_sort_by_time():
    policy = Policy("nightly", prefix="pz")
    early = snapshot_name(policy, datetime(2026, 3, 9, 23, 59, 59, tzinfo=UTC))
    late = snapshot_name(policy, datetime(2026, 3, 10, 0, 0, 0, tzinfo=UTC))
    assert early == "pz_nightly_20260309T235959Z"
    assert sorted([late, early]) == [early, late]


def test_a_host_clock_behind_does_not_make_every_tick_due():
    policy = Policy("p", hourly=24)
    at_noon = T0 + timedelta(hours=12, seconds=30)
    snapshot = ours("tank/a", at_noon)
    snapshot = SnapshotInfo(snapshot.full_name, at_noon - timedelta(minutes=5),
                            snapshot.properties)  # creation by the host's slow clock
    assert due(policy, [snapshot], at_noon + timedelta(minutes=1)).periods == ()


def test_a_snapshot_from_a_clock_set_back_does_not_block_the_current_slot():
    policy = Policy("p", hourly=24)
    from_the_future = ours("tank/a", T0 + timedelta(days=1))
    assert due(policy, [from_the_future], T0 + timedelta(minutes=10)).periods == (Period.HOURLY,)


def test_look_alikes_and_other_policies_do_not_count():
    policy = Policy("p", hourly=24)
    now = T0 + timedelta(minutes=10)
    others = [hand_made("tank/a", T0, "pozol_p_20260302T000000Z"),
              ours("tank/a", T0, policy="other")]
    assert due(policy, others, now).periods == (Period.HOURLY,)


def test_a_renamed_snapshot_still_counts():
    policy = Policy("p", hourly=24)
    renamed = ours("tank/a", T0, name="keep-me-please")
    assert due(policy, [renamed], T0 + timedelta(minutes=10)).periods == ()


def test_a_cluster_is_due_while_one_of_its_datasets_lacks_the_slot():
    policy = Policy("p", hourly=24)
    now = T0 + timedelta(minutes=10)
    data_only = [ours("tank/data", T0)]
    assert due(policy, data_only, now).periods == ()
    assert due(policy, data_only, now, datasets=("tank/data", "tank/wal")).periods == (
        Period.HOURLY,)
    assert due(policy, data_only, now, datasets="tank/wal").periods == (Period.HOURLY,)
    both = [ours("tank/data", T0), ours("tank/wal", T0)]
    assert due(policy, both, now, datasets=("tank/data", "tank/wal")).periods == ()


def test_ticking_every_seven_minutes_for_three_days_takes_one_snapshot_per_hour():
    policy = Policy("p", hourly=24, daily=7)
    taken: list[SnapshotInfo] = []
    for minute in range(0, 3 * 24 * 60, 7):
        result = due(policy, taken, T0 + timedelta(minutes=minute, seconds=17))
        if result.snapshot:
            taken.append(SnapshotInfo(f"tank/a@{result.snapshot.name}",
                                      result.snapshot.taken, result.snapshot.properties()))
    assert len(taken) == 72
    assert [s.properties["pozol:periods"] for s in taken].count("hourly,daily") == 3


def test_now_must_be_aware():
    with pytest.raises(ValueError, match="timezone-aware"):
        due(Policy("p", hourly=1), [], datetime(2026, 3, 2))
