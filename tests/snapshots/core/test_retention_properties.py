"""Properties that hold for any set of snapshots, found by Hypothesis.

Snapshots are drawn as events (a moment and the datasets snapshotted then, so
cluster units arise) of every kind: ours, hand-made look-alikes, other
policies', on demand; held, cloned, protected, renamed, without pozol:taken,
from a host whose clock is off, and timed after `now`.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.snapshots.core.policy import (
    FREQUENT_MINUTES,
    TAKEN_PROPERTY,
    Period,
    Policy,
    SnapshotInfo,
    owned_by,
)
from apps.snapshots.core.retention import plan_prune, preview
from apps.snapshots.core.schedule import slot_start
from tests.snapshots.core.snaps import T0, hand_made, on_demand, ours

SETTINGS = settings(max_examples=150, deadline=None, database=None)
DATASETS = ("tank/pg/data", "tank/pg/wal", "tank/other")
SPAN_MINUTES = 50 * 24 * 60
NOW = T0 + timedelta(minutes=SPAN_MINUTES * 9 // 10)  # some snapshots come after it

policies = st.builds(
    Policy, name=st.just("p"), frequently=st.integers(0, 4),
    frequent_minutes=st.sampled_from(FREQUENT_MINUTES), hourly=st.integers(0, 6),
    daily=st.integers(0, 5), weekly=st.integers(0, 3), monthly=st.integers(0, 2))


@st.composite
def member(draw, dataset: str, minute: int, second: int) -> SnapshotInfo:
    taken = T0 + timedelta(minutes=minute, seconds=second)
    kind = draw(st.sampled_from(["ours"] * 6 + ["hand", "other", "demand", "renamed"]))
    if kind == "hand":
        return hand_made(dataset, taken, ours(dataset, taken).name)
    if kind == "demand":
        return on_demand(dataset, taken, f"now_{minute}")
    snapshot = ours(dataset, taken, policy="q" if kind == "other" else "p",
                    name=f"renamed_{minute}" if kind == "renamed" else None,
                    userrefs=draw(st.sampled_from([0] * 8 + [1, 2])),
                    clones=draw(st.sampled_from([()] * 9 + [("tank/clone",)])))
    return _with_host_clock(draw, snapshot)


def _with_host_clock(draw, snapshot: SnapshotInfo) -> SnapshotInfo:
    """Sometimes creation is off by the host's clock, sometimes pozol:taken is missing."""
    skew = timedelta(minutes=draw(st.sampled_from([0, 0, 0, -7, 3])))
    properties = dict(snapshot.properties)
    if draw(st.integers(0, 9)) == 0:
        del properties[TAKEN_PROPERTY]
    return dataclasses.replace(snapshot, created=snapshot.created + skew,
                               properties=properties)


@st.composite
def snapshot_sets(draw) -> list[SnapshotInfo]:
    events = draw(st.lists(st.tuples(st.integers(0, SPAN_MINUTES), st.integers(0, 59),
                                     st.sets(st.sampled_from(DATASETS), min_size=1)),
                           max_size=40))
    found: dict[str, SnapshotInfo] = {}
    for minute, second, datasets in events:
        for dataset in sorted(datasets):
            snapshot = draw(member(dataset, minute, second))
            found.setdefault(snapshot.full_name, snapshot)
    return list(found.values())


@st.composite
def cases(draw):
    snapshots = draw(snapshot_sets())
    chosen = draw(st.sets(st.sampled_from([s.full_name for s in snapshots]))
                  if snapshots else st.just(set()))
    return draw(policies), snapshots, {name: "newest common of link 1" for name in chosen}


def names(snapshots) -> set[str]:
    return {s.full_name for s in snapshots}


@SETTINGS
@given(cases())
def test_nothing_unsafe_is_ever_destroyed(case):
    policy, snapshots, protected = case
    for snapshot in plan_prune(policy, snapshots, protected, NOW).destroy:
        assert owned_by(snapshot, policy)
        assert snapshot.userrefs == 0
        assert snapshot.clones == ()
        assert snapshot.full_name not in protected
        assert snapshot.taken <= NOW


@SETTINGS
@given(cases())
def test_keep_and_destroy_split_the_snapshots_and_each_kept_one_has_a_reason(case):
    policy, snapshots, protected = case
    plan = plan_prune(policy, snapshots, protected, NOW)
    kept = names(k.snapshot for k in plan.keep)
    assert kept | names(plan.destroy) == names(snapshots)
    assert not kept & names(plan.destroy)
    assert all(k.reasons for k in plan.keep)


@SETTINGS
@given(cases())
def test_the_newest_of_the_policy_on_each_dataset_is_kept(case):
    policy, snapshots, protected = case
    destroyed = names(plan_prune(policy, snapshots, protected, NOW).destroy)
    newest: dict[str, SnapshotInfo] = {}
    for s in snapshots:
        if owned_by(s, policy) and s.taken <= NOW:
            if s.dataset not in newest or (s.taken, s.name) > (newest[s.dataset].taken,
                                                                newest[s.dataset].name):
                newest[s.dataset] = s
    assert not names(newest.values()) & destroyed


@SETTINGS
@given(cases())
def test_pruning_twice_destroys_nothing_more(case):
    policy, snapshots, protected = case
    first = plan_prune(policy, snapshots, protected, NOW)
    left = [s for s in snapshots if s.full_name not in names(first.destroy)]
    assert plan_prune(policy, left, protected, NOW).destroy == ()


@SETTINGS
@given(cases())
def test_the_n_newest_slots_of_each_period_keep_their_first_snapshot(case):
    policy, snapshots, protected = case
    destroyed = names(plan_prune(policy, snapshots, protected, NOW).destroy)
    for period in Period:
        for group in _ours_by_dataset(policy, snapshots).values():
            first_of_slot: dict = {}
            for s in sorted(group, key=lambda s: (s.taken, s.name)):
                first_of_slot.setdefault(slot_start(policy, period, s.taken), s)
            newest = sorted(first_of_slot, reverse=True)[:policy.count(period)]
            assert not {first_of_slot[slot].full_name for slot in newest} & destroyed


@SETTINGS
@given(cases())
def test_without_guards_a_dataset_keeps_no_more_than_its_counts_ask(case):
    policy, snapshots, _ = case
    plain = [s for s in snapshots if owned_by(s, policy) and not s.userrefs
             and not s.clones and s.taken <= NOW and s.dataset == "tank/other"]
    plan = plan_prune(policy, plain, None, NOW)
    most = 1 + sum(policy.count(p) for p in Period)
    assert len(plan.keep) <= min(len(plain), most)


@SETTINGS
@given(cases())
def test_a_units_snapshots_go_together(case):
    policy, snapshots, protected = case
    destroyed = names(plan_prune(policy, snapshots, protected, NOW).destroy)
    units = defaultdict(set)
    for s in snapshots:
        if owned_by(s, policy):
            units[s.name].add(s.full_name)
    for members in units.values():
        assert members <= destroyed or not members & destroyed


@SETTINGS
@given(cases(), st.sampled_from(list(Period)), st.integers(1, 5))
def test_raising_a_count_never_destroys_more_and_the_preview_says_so(case, period, more):
    policy, snapshots, protected = case
    raised = dataclasses.replace(policy, **{period.value: policy.count(period) + more})
    before = plan_prune(policy, snapshots, protected, NOW)
    after = plan_prune(raised, snapshots, protected, NOW)
    assert names(after.destroy) <= names(before.destroy)
    change = preview(policy, raised, snapshots, protected, NOW)
    assert change.added == ()
    assert names(change.spared) == names(before.destroy) - names(after.destroy)
    back = preview(raised, policy, snapshots, protected, NOW)
    assert names(back.added) == names(change.spared)


def _ours_by_dataset(policy: Policy, snapshots: list[SnapshotInfo]) -> dict:
    groups = defaultdict(list)
    for s in snapshots:
        if owned_by(s, policy) and s.taken <= NOW:
            groups[s.dataset].append(s)
    return groups
