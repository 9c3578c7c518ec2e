"""A plan runs the advisor on its desired values: the row that brings a hazard onto
this host is marked, and the plan says what it resolves. From recorded facts."""

from __future__ import annotations

from apps.tuning.core.changes import Change
from apps.tuning.core.planner import judge, plan
from apps.tuning.core.profiles import ProfileSettings, builtin
from tests.tuning.core import hosts

DATA = "tank/pg/data"


def settings(**layers) -> ProfileSettings:
    return ProfileSettings.from_dict({"zfs": {}, "module": {}, "sysctl": {}, "postgres": {},
                                      **layers})


def test_large_shared_buffers_on_zfs_fuse_mark_their_row():
    facts = hosts.fuse()
    computed = plan(facts, settings(postgres={"shared_buffers": "12GB", "work_mem": "8MB"}))
    rows = {c.key: c for c in computed.changes}
    hazards = {f.id: f.severity for f in rows["shared_buffers"].hazards}
    assert hazards == {"zfs_fuse_large_shared_buffers": "warning",
                       "shared_buffers_over_40pct": "warning", "huge_pages_not_sized": "info"}
    assert rows["work_mem"].hazards == ()


def test_the_same_buffers_on_openzfs_are_no_hazard():
    computed = plan(hosts.openzfs(), settings(postgres={"shared_buffers": "1GB"}))
    assert [c.hazards for c in computed.changes] == [()]


def test_a_hazard_already_there_is_not_introduced_again():
    facts = hosts.set_setting(hosts.fuse(), "shared_buffers", str(2 * 1024**3 // 8192))
    computed = plan(facts, settings(postgres={"shared_buffers": "3GB"}))
    assert computed.changes[0].hazards == ()
    staged = {f.id: f.stage for f in computed.findings}
    assert staged["zfs_fuse_large_shared_buffers"] == "current"


def test_the_plan_says_which_current_findings_it_resolves():
    facts = hosts.fuse()
    computed = plan(facts, settings(zfs={"wal": {"logbias": "latency"}},
                                    sysctl={"vm.dirty_bytes": "512MB",
                                            "vm.dirty_background_bytes": "128MB"}))
    resolved = {f.id for f in computed.findings if f.stage == "resolved"}
    assert {"logbias_throughput_no_slog", "dirty_limit_large"} <= resolved
    assert all(c.hazards == () for c in computed.changes)


def test_the_safe_profile_on_zfs_fuse_marks_shared_buffers():
    """oltp-safe sizes shared_buffers at RAM/4: several GB, which zfs-fuse stalls under."""
    computed = plan(hosts.fuse(), builtin("oltp-safe").settings)
    marked = {c.key for c in computed.changes if c.hazards}
    assert marked == {"shared_buffers"}


def test_a_rollback_is_judged_too_putting_back_a_large_dirty_ratio_is_marked():
    facts = hosts.fuse()  # as the apply left it: 256MB of dirty bytes, the ratio zeroed
    facts.sysctls.update({"vm.dirty_bytes": 256 * 1024**2, "vm.dirty_ratio": 0})
    back = Change("sysctl", "kernel", "vm.dirty_ratio", "0", "20", None, "sysctl", True, "",
                  None, "medium")
    findings, (row,) = judge(facts, [back])
    assert [(f.id, f.severity) for f in row.hazards] == [("dirty_limit_large", "warning")]
    assert {f.id: f.stage for f in findings}["dirty_limit_large"] == "introduced"
