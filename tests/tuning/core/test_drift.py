"""Drift from recorded facts: differences, and settings that wait for a restart."""

from __future__ import annotations

from dataclasses import replace

from apps.tuning.core.drift import Pending, assess
from apps.tuning.core.profiles import ProfileSettings
from tests.tuning.core import hosts

DATA = "tank/pg/data"
PROFILE = ProfileSettings.from_dict({"zfs": {"data": {"recordsize": "16K"}}, "module": {},
                                     "sysctl": {}, "postgres": {"shared_buffers": "256MB"}})


def waiting_for_restart(facts):
    """shared_buffers written with ALTER SYSTEM, the server not restarted yet."""
    rows = hosts.cluster(facts).settings
    at = next(i for i, row in enumerate(rows) if row.name == "shared_buffers")
    rows[at] = replace(rows[at], pending_restart=True)
    return facts


def test_differences_name_their_dataset():
    found = assess(hosts.fuse(), PROFILE)
    assert {(c.target, c.key) for c in found.differences} == {
        (DATA, "recordsize"), (hosts.cluster(hosts.fuse()).data_dir, "shared_buffers")}
    assert found.pending == ()


def test_a_value_written_and_waiting_for_a_restart_is_pending_not_drift():
    facts = waiting_for_restart(hosts.fuse())
    data_dir = hosts.cluster(facts).data_dir
    found = assess(facts, PROFILE, {(data_dir, "shared_buffers"): "256MB"})
    assert [c.key for c in found.differences] == ["recordsize"]
    assert found.pending == (Pending(data_dir, "shared_buffers", "128MB", "256MB", "256MB"),)


def test_another_value_waiting_for_a_restart_is_still_a_difference():
    facts = waiting_for_restart(hosts.fuse())
    data_dir = hosts.cluster(facts).data_dir
    found = assess(facts, PROFILE, {(data_dir, "shared_buffers"): "512MB"})
    assert {c.key for c in found.differences} == {"recordsize", "shared_buffers"}


def test_a_pending_value_written_outside_pozol_is_pending_and_unknown():
    facts = waiting_for_restart(hosts.fuse())
    found = assess(facts, PROFILE)
    assert [(p.key, p.pending) for p in found.pending] == [("shared_buffers", None)]
