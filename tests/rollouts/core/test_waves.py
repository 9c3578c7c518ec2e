"""The pure rules of a rollout: its waves, a wave's verdict, what a stop rolls back,
and what counts as a change by hand."""

import pytest

from apps.rollouts.core import waves
from apps.rollouts.core.waves import (
    AS_PROFILE,
    WavePlanError,
    changed_by_hand,
    judge_wave,
    new_findings,
    plan_waves,
    to_roll_back,
)


def test_the_canary_goes_alone_then_waves_of_the_size_in_the_order_given():
    assert plan_waves([1, 2, 3, 4, 5, 6], None, 2) == [[1], [2, 3], [4, 5], [6]]
    assert plan_waves([1, 2, 3, 4], 3, 5) == [[3], [1, 2, 4]]
    assert plan_waves([7], None, 1) == [[7]]


@pytest.mark.parametrize(("hosts", "canary", "size", "field"), [
    ([], None, 1, "hosts"),
    ([1, 1], None, 1, "hosts"),
    ([1, 2], None, 0, "wave_size"),
    ([1, 2], None, -3, "wave_size"),
    ([1, 2], None, True, "wave_size"),
    ([1, 2], 9, 1, "canary"),
])
def test_a_rollout_that_cannot_be_planned_names_the_field(hosts, canary, size, field):
    with pytest.raises(WavePlanError) as refused:
        plan_waves(hosts, canary, size)
    assert refused.value.field == field and str(refused.value)


def test_a_wave_is_undecided_until_every_host_ended():
    verdict = judge_wave({"a": waves.DONE, "b": waves.APPLYING}, {}, canary=False)
    assert not verdict.decided


def test_any_failure_stops_with_its_host_and_reason():
    verdict = judge_wave({"a": waves.DONE, "b": waves.FAILED, "c": waves.SKIPPED},
                         {"b": "apply failed: max_stack_depth"}, canary=False)
    assert (verdict.decided, verdict.passed) == (True, False)
    assert verdict.reason == "b failed: apply failed: max_stack_depth"


def test_skipped_hosts_pass_a_wave_but_a_skipped_canary_stops():
    assert judge_wave({"a": waves.SKIPPED, "b": waves.DONE}, {}, canary=False).passed
    assert judge_wave({"a": waves.SKIPPED}, {}, canary=False).passed
    canary = judge_wave({"a": waves.SKIPPED}, {"a": "changed by hand"}, canary=True)
    assert (canary.decided, canary.passed) == (True, False)
    assert "canary a was skipped: changed by hand" in canary.reason
    assert judge_wave({"a": waves.DONE}, {}, canary=True).passed


def test_a_stop_rolls_back_the_failing_wave_or_every_wave_so_far_newest_first():
    layout = [[1], [2, 3], [4, 5], [6]]
    assert to_roll_back(layout, 2, earlier_too=False) == [4, 5]
    assert to_roll_back(layout, 2, earlier_too=True) == [4, 5, 2, 3, 1]
    assert to_roll_back(layout, 0, earlier_too=True) == [1]


def test_a_change_by_hand_is_any_value_that_moved_since_the_baseline():
    before = {"zfs tank/pg/data atime": "on", "postgres /d work_mem": "4096"}
    assert changed_by_hand(before, dict(before)) == []
    moved = changed_by_hand(before, {"zfs tank/pg/data atime": "off",
                                     "postgres /d work_mem": "4096"})
    assert moved == ["zfs tank/pg/data atime: 'on' -> 'off'"]
    # Set to the profile's value by hand: it drops out of what the version would change.
    reached = changed_by_hand(before, {"postgres /d work_mem": "4096"})
    assert reached == [f"zfs tank/pg/data atime: 'on' -> {AS_PROFILE!r}"]
    # Moved away from the profile's value it had.
    left = changed_by_hand({}, {"zfs tank/pg/data atime": "on"})
    assert left == [f"zfs tank/pg/data atime: {AS_PROFILE!r} -> 'on'"]


def test_only_critical_findings_new_since_the_baseline_count():
    assert new_findings(["a host"], ["a host", "b tank"]) == ["b tank"]
    assert new_findings(["a host", "b tank"], ["a host"]) == []


def test_pgbench_fails_a_host_only_when_tps_fell_more_than_allowed():
    assert waves.tps_drop(1000.0, 950.0, 10) is None
    assert waves.tps_drop(1000.0, 1200.0, 0) is None
    worse = waves.tps_drop(1000.0, 850.0, 10)
    assert worse == "pgbench TPS fell 15.0% (1000.0 -> 850.0), more than the 10% allowed"
    assert waves.tps_drop(1000.0, 900.0, 10) is None  # exactly the limit passes
    assert waves.tps_drop(None, 900.0, 10) == "pgbench gave no TPS to compare"
    assert waves.tps_drop(0.0, 900.0, 10) == "pgbench gave no TPS to compare"
    assert waves.tps_drop(1000.0, None, 10) == "pgbench gave no TPS to compare"
