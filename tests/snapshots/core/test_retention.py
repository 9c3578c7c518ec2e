"""Pruning keeps the counts and never destroys what must stay: examples, then properties."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from apps.snapshots.core.policy import Policy, PolicyError, SnapshotInfo, receiving
from apps.snapshots.core.retention import Why, plan_prune, preview, refusals, stale
from tests.snapshots.core.snaps import T0, hand_made, on_demand, ours

NOW = T0 + timedelta(days=40)


def hourly_for(days: int, dataset: str = "tank/a", policy: str = "p") -> list[SnapshotInfo]:
    """What an hourly schedule leaves behind over `days` days up to NOW."""
    return [ours(dataset, NOW - timedelta(hours=h), policy) for h in range(days * 24)]


def names(snapshots) -> set[str]:
    return {s.full_name for s in snapshots}


def whys(plan, snapshot: SnapshotInfo) -> set[Why]:
    return {r.why for r in plan.reasons(snapshot.full_name)}


def test_the_newest_of_each_period_are_kept_and_the_rest_destroyed():
    snapshots = hourly_for(10)
    plan = plan_prune(Policy("p", hourly=24, daily=7), snapshots, None, NOW)
    last_24_hours = names(snapshots[:24])
    midnights = {s.full_name for s in snapshots if s.taken.hour == 0}
    last_7_midnights = set(sorted(midnights)[-7:])
    assert names(k.snapshot for k in plan.keep) == last_24_hours | last_7_midnights
    assert names(plan.destroy) == names(snapshots) - last_24_hours - last_7_midnights
    assert [s.taken for s in plan.destroy] == sorted(s.taken for s in plan.destroy)


def test_every_kept_snapshot_says_why():
    snapshots = hourly_for(2)  # NOW is midnight: it is the newest, hourly and daily
    plan = plan_prune(Policy("p", hourly=3, daily=2), snapshots, None, NOW)
    newest, yesterday = snapshots[0], snapshots[24]
    assert [r.text for r in plan.reasons(newest.full_name)] == [
        "newest snapshot of the policy", "one of the 3 newest hourly snapshots",
        "one of the 2 newest daily snapshots"]
    assert [r.text for r in plan.reasons(yesterday.full_name)] == [
        "one of the 2 newest daily snapshots"]
    assert whys(plan, snapshots[1]) == {Why.PERIOD}
    assert plan.reasons(snapshots[-1].full_name) == ()


def test_a_hand_made_snapshot_named_like_ours_is_kept():
    look_alike = hand_made("tank/a", T0, "pozol_p_20260302T000000Z")
    plan = plan_prune(Policy("p", hourly=1), hourly_for(2) + [look_alike], None, NOW)
    assert look_alike not in plan.destroy
    assert [r.text for r in plan.reasons(look_alike.full_name)] == ["not taken by PoZoL"]


def test_ours_renamed_is_still_ours_and_pruned():
    renamed = ours("tank/a", T0, name="before-upgrade")
    plan = plan_prune(Policy("p", hourly=1), hourly_for(1) + [renamed], None, NOW)
    assert renamed in plan.destroy


def test_snapshots_of_other_policies_and_on_demand_ones_are_kept():
    other = ours("tank/a", T0, policy="weekly")
    now_one = on_demand("tank/a", T0, "pozol_now_20260302T000000Z")
    plan = plan_prune(Policy("p", hourly=1), hourly_for(1) + [other, now_one], None, NOW)
    assert [r.text for r in plan.reasons(other.full_name)] == [
        "taken by PoZoL under policy 'weekly'"]
    assert [r.text for r in plan.reasons(now_one.full_name)] == [
        "taken by PoZoL under no policy (taken on demand)"]


def test_held_cloned_and_protected_snapshots_are_never_destroyed():
    held = ours("tank/a", T0, name="held", userrefs=2)
    cloned = ours("tank/a", T0, name="cloned", clones=("tank/c1", "tank/c2"))
    common = ours("tank/a", T0, name="common")
    plan = plan_prune(Policy("p", hourly=1), hourly_for(1) + [held, cloned, common],
                      {common.full_name: "newest common snapshot of link 3"}, NOW)
    assert not names(plan.destroy) & {held.full_name, cloned.full_name, common.full_name}
    assert [r.text for r in plan.reasons(held.full_name)] == ["held (2 holds)"]
    assert [r.text for r in plan.reasons(cloned.full_name)] == [
        "has clones: tank/c1, tank/c2"]
    assert [r.text for r in plan.reasons(common.full_name)] == [
        "newest common snapshot of link 3"]


@pytest.mark.parametrize("dataset", ["tank/a", "tank/b"])
def test_the_newest_of_the_policy_is_kept_on_each_dataset_even_with_counts_zero(dataset):
    # b's schedule stopped five hours ago, and its names differ from a's
    b = [ours("tank/b", NOW - timedelta(hours=h, minutes=30)) for h in range(5, 24)]
    snapshots = hourly_for(1, "tank/a") + b
    plan = plan_prune(Policy("p"), snapshots, None, NOW)
    newest = max((s for s in snapshots if s.dataset == dataset), key=lambda s: s.taken)
    assert [k.snapshot for k in plan.keep] == [b[0], snapshots[0]]
    assert whys(plan, newest) == {Why.NEWEST}


def test_same_names_on_two_datasets_are_one_unit():
    a, b = hourly_for(1, "tank/a"), hourly_for(1, "tank/b")[5:]
    plan = plan_prune(Policy("p"), a + b, None, NOW)
    assert names(k.snapshot for k in plan.keep) == {a[0].full_name, a[5].full_name,
                                                    b[0].full_name}
    assert whys(plan, a[5]) == {Why.UNIT}


def test_counts_apply_per_dataset():
    snapshots = hourly_for(2, "tank/a") + hourly_for(1, "tank/b")
    plan = plan_prune(Policy("p", hourly=5), snapshots, None, NOW)
    kept = [k.snapshot for k in plan.keep]
    assert sum(s.dataset == "tank/a" for s in kept) == 5
    assert sum(s.dataset == "tank/b" for s in kept) == 5


def test_a_cluster_snapshot_is_kept_whole_when_one_half_must_stay():
    data, wal = hourly_for(2, "tank/pg/data"), hourly_for(2, "tank/pg/wal")
    old_data = data[-1]
    held_data = SnapshotInfo(old_data.full_name, old_data.created, old_data.properties,
                             userrefs=1)
    data[-1] = held_data
    plan = plan_prune(Policy("p", hourly=2), data + wal, None, NOW)
    old_wal = wal[-1]
    assert old_wal not in plan.destroy
    assert [r.text for r in plan.reasons(old_wal.full_name)] == [
        f"taken together with {held_data.full_name}, which is kept"]
    destroyed = plan.destroy_names()
    assert len(destroyed) == 2 * (48 - 3)
    for first, second in zip(destroyed[::2], destroyed[1::2], strict=True):
        assert first.split("@")[1] == second.split("@")[1]  # a unit's halves are adjacent


def test_a_hand_made_look_alike_on_the_other_dataset_does_not_pin_ours():
    data = hourly_for(2, "tank/pg/data")
    look_alike = hand_made("tank/pg/wal", T0, data[-1].name)
    plan = plan_prune(Policy("p", hourly=2), data + [look_alike], None, NOW)
    assert data[-1] in plan.destroy
    assert look_alike not in plan.destroy


def test_a_burst_within_one_hour_does_not_push_out_older_hourlies():
    history = hourly_for(2)
    burst = [ours("tank/a", NOW + timedelta(minutes=m)) for m in range(1, 59)]
    plan = plan_prune(Policy("p", hourly=24), history + burst, None, NOW + timedelta(minutes=59))
    kept = names(k.snapshot for k in plan.keep)
    assert names(history[1:24]) <= kept  # the 23 hours before the burst's hour stay
    assert history[0].full_name in kept  # the burst hour keeps its first snapshot
    assert burst[-1].full_name in kept  # and the newest
    assert names(burst[:-1]) <= names(plan.destroy)


def test_after_an_outage_the_counts_still_reach_back_before_it():
    before = [ours("tank/a", NOW - timedelta(days=30, hours=h)) for h in range(48)]
    plan = plan_prune(Policy("p", hourly=24), before + [ours("tank/a", NOW)], None, NOW)
    assert len(plan.keep) == 24


def test_snapshots_timed_after_now_are_kept_and_do_not_displace_the_present():
    policy = Policy("p", hourly=3)
    future = [ours("tank/a", NOW + timedelta(days=1, hours=h)) for h in range(5)]
    present = hourly_for(1)
    plan = plan_prune(policy, present + future, None, NOW)
    assert names(plan.destroy) == names(present[3:])
    assert all(whys(plan, s) == {Why.FUTURE} for s in future)


def test_the_receiver_prunes_received_snapshots_with_the_links_own_counts():
    source = Policy("prod", hourly=24, daily=7)
    received = hourly_for(10, "backup/pg/data", policy="prod")
    common = received[0]
    hand = hand_made("backup/pg/data", T0, "before-restore-test")
    keep_rules = receiving(source, daily=30)
    plan = plan_prune(keep_rules, received + [hand],
                      {common.full_name: "newest common snapshot of link 1"}, NOW)
    first_of_each_day = {s.full_name for s in received if s.taken.hour == 0} | {
        received[-1].full_name}  # the oldest day starts at 01:00
    assert names(k.snapshot for k in plan.keep) == first_of_each_day | {hand.full_name}
    assert whys(plan, common) == {Why.PROTECTED, Why.NEWEST, Why.PERIOD}


def test_preview_shows_what_a_lower_count_would_add_and_a_higher_one_spare():
    snapshots = hourly_for(3)
    old = Policy("p", hourly=24)
    lower = preview(old, Policy("p", hourly=12), snapshots, None, NOW)
    assert names(lower.added) == names(snapshots[12:24])
    assert lower.spared == ()
    assert names(lower.plan.destroy) == names(snapshots[12:])
    higher = preview(old, Policy("p", hourly=36), snapshots, None, NOW)
    assert higher.added == ()
    assert names(higher.spared) == names(snapshots[24:36])


def test_preview_of_an_unchanged_policy_is_empty_even_with_pending_destroys():
    snapshots = hourly_for(3)
    same = preview(Policy("p", hourly=24), Policy("p", hourly=24), snapshots, None, NOW)
    assert (same.added, same.spared) == ((), ())
    assert len(same.plan.destroy) == 48


def test_preview_refuses_a_rename():
    with pytest.raises(PolicyError, match="identity on ZFS") as refused:
        preview(Policy("p"), Policy("q"), [], None, NOW)
    assert refused.value.field == "name"


def test_stale_when_the_newest_is_older_than_twice_the_shortest_interval():
    policy = Policy("p", hourly=24, daily=7)
    snapshots = [ours("tank/a", NOW - timedelta(hours=2))]
    at_limit = stale(policy, snapshots, NOW)
    assert (at_limit.stale, at_limit.age, at_limit.limit) == (
        False, timedelta(hours=2), timedelta(hours=2))
    late = stale(policy, snapshots, NOW + timedelta(seconds=1))
    assert late.stale
    assert late.newest == snapshots[0]
    assert late.text == "newest snapshot of policy 'p' is 2 h old (alert after 2 h)"


def test_stale_uses_the_frequent_period_when_there_is_one():
    policy = Policy("p", frequently=4, frequent_minutes=5, daily=7)
    result = stale(policy, [ours("tank/a", NOW - timedelta(minutes=11))], NOW)
    assert (result.stale, result.limit) == (True, timedelta(minutes=10))


def test_stale_without_any_snapshot_depends_on_when_the_policy_was_assigned():
    policy = Policy("p", hourly=24)
    assert stale(policy, [], NOW).stale
    assert not stale(policy, [], NOW, assigned_at=NOW - timedelta(hours=1)).stale
    assert stale(policy, [], NOW, assigned_at=NOW - timedelta(hours=3)).stale


def test_stale_ignores_other_owners_and_snapshots_from_the_future():
    policy = Policy("p", hourly=24)
    others = [hand_made("tank/a", NOW, "pozol_p_x"), ours("tank/a", NOW, policy="q"),
              ours("tank/a", NOW + timedelta(days=2))]
    assert stale(policy, others, NOW).stale


def test_a_policy_that_takes_nothing_is_never_stale():
    result = stale(Policy("p"), [ours("tank/a", NOW - timedelta(days=400))], NOW)
    assert not result.stale
    assert result.age == timedelta(days=400)


def test_now_must_be_aware():
    with pytest.raises(ValueError, match="timezone-aware"):
        plan_prune(Policy("p"), [], None, datetime(2026, 3, 2))


def test_refusals_give_a_hand_made_destroy_the_same_guards():
    assert refusals(hand_made("tank/a", T0, "mine")) == ()
    guarded = ours("tank/a", T0, userrefs=1, clones=("tank/c",))
    assert [r.text for r in refusals(guarded, {guarded.full_name: "last common snapshot "
                                                                  "of link 2"})] == [
        "held (1 hold)", "has clones: tank/c", "last common snapshot of link 2"]


def test_a_snapshot_listed_twice_keeps_the_guards_of_both_entries():
    old = hourly_for(2)[-1]
    held_copy = SnapshotInfo(old.full_name, old.created, old.properties, userrefs=1)
    plan = plan_prune(Policy("p", hourly=1), hourly_for(2) + [held_copy], None, NOW)
    assert old.full_name not in plan.destroy_names()
    assert whys(plan, old) == {Why.HELD}


def test_a_units_halves_are_destroyed_side_by_side_even_when_their_times_differ():
    def untimed(dataset: str, unit: int, late: int) -> SnapshotInfo:
        # no pozol:taken, units two seconds apart, the WAL half created 3 s late
        return SnapshotInfo(f"{dataset}@pozol_p_{unit}",
                            T0 + timedelta(seconds=2 * unit + late),
                            {"pozol:owner": "pozol", "pozol:policy": "p"})
    snapshots = [untimed(d, u, late) for u in range(4)
                 for d, late in (("tank/data", 0), ("tank/wal", 3))]
    plan = plan_prune(Policy("p"), snapshots, None, NOW)
    assert plan.destroy_names() == tuple(
        f"{d}@pozol_p_{u}" for u in range(3) for d in ("tank/data", "tank/wal"))
