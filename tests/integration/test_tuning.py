"""Tuning on real hosts: plan, apply, verify on the host, re-plan, roll back.

Sysctls belong to the one kernel every test host shares (and this machine):
the tests save vm.* first and put it back whatever happens.
"""

from pathlib import Path

import pytest

from apps.fleet import services as fleet
from apps.tuning import services
from apps.tuning.models import Plan, PlanChange, Profile
from tests.driving import drive
from tests.integration.conftest import register, run_on, show

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

VM = ("dirty_bytes", "dirty_background_bytes", "dirty_ratio", "dirty_background_ratio",
      "overcommit_memory", "swappiness")


def read_vm() -> dict[str, str]:
    return {name: Path(f"/proc/sys/vm/{name}").read_text().strip() for name in VM}


@pytest.fixture
def kernel_restored():
    saved = read_vm()
    yield saved
    for name in ("dirty_ratio", "dirty_background_ratio", "dirty_bytes",
                 "dirty_background_bytes", "overcommit_memory", "swappiness"):
        if saved[name] != "0" or name in {"overcommit_memory", "swappiness"}:
            Path(f"/proc/sys/vm/{name}").write_text(saved[name])


def zfs_get(fleet_host, prop: str, dataset: str) -> str:
    return run_on(fleet_host, f"zfs get -Hp -o value {prop} {dataset}").strip()


def postmaster_pid(fleet_host) -> str:
    return run_on(fleet_host, f"head -1 {fleet_host.pg_data_dir}/postmaster.pid").strip()


def discovered(fleet_host):
    host = register(fleet_host)
    assert drive(host.operations.get()).status == "succeeded"
    host.refresh_from_db()
    return host


def rediscover(host):
    assert drive(fleet.discover(host)).status == "succeeded"
    host.refresh_from_db()


def test_safe_profile_plan_apply_replan_and_rollback(fleet_hosts, delivered, kernel_restored):
    fleet_host = fleet_hosts[0]
    data = fleet_host.pg_data_dataset
    host = discovered(fleet_host)
    services.assign(host, Profile.objects.get(slug="oltp-safe"))
    original = {"recordsize": zfs_get(fleet_host, "recordsize", data),
                "atime": zfs_get(fleet_host, "atime", data),
                "full_page_writes": show(fleet_host, "full_page_writes"),
                "shared_buffers": show(fleet_host, "shared_buffers")}

    plan = services.make_plan(host)
    by_key = {(c.target, c.key): c for c in plan.changes.all()}
    assert by_key[(data, "recordsize")].desired in {"16K", "16384"}
    assert by_key[(data, "compression")].fallback_for == "lz4"  # zfs-fuse: no lz4
    unsupported = plan.changes.filter(supported=False)
    assert unsupported.filter(layer="module").exists()  # zfs-fuse: no module parameters
    assert all(c.reason for c in unsupported)

    operation = drive(services.apply_plan(plan, allow_restart=True))
    plan.refresh_from_db()
    assert operation.status == "succeeded", operation.error
    logged = [line.text for line in operation.log_lines.all()]
    assert any("alter system set \"full_page_writes\" = 'off'" in text for text in logged)
    assert plan.status == Plan.Status.APPLIED
    assert zfs_get(fleet_host, "recordsize", data) == "16384"
    assert zfs_get(fleet_host, "atime", data) == "off"
    assert show(fleet_host, "full_page_writes") == "off"
    assert show(fleet_host, "shared_buffers") == by_key[(fleet_host.pg_data_dir,
                                                          "shared_buffers")].desired
    sysctls = plan.changes.filter(layer="sysctl", status=PlanChange.Status.APPLIED)
    for change in sysctls:
        assert read_vm()[change.key.removeprefix("vm.")] == change.desired
    assert Path(fleet_host.etc_sysctl_dir, "90-pozol.conf").exists() == sysctls.exists()

    rediscover(host)
    assert services.make_plan(host).is_empty
    assert not host.assignment.drifted

    back, rollback = services.rollback(plan, allow_restart=True)
    assert drive(rollback).status == "succeeded", rollback.error
    assert zfs_get(fleet_host, "recordsize", data) == original["recordsize"]
    assert zfs_get(fleet_host, "atime", data) == original["atime"]
    assert show(fleet_host, "full_page_writes") == original["full_page_writes"]
    assert show(fleet_host, "shared_buffers") == original["shared_buffers"]
    for name in VM:
        assert read_vm()[name] == kernel_restored[name], name
    assert not Path(fleet_host.etc_sysctl_dir, "90-pozol.conf").exists()
    rediscover(host)
    # Rolled back: the profile is no longer applied, which is not drift.
    assert (host.assignment.state, host.assignment.applied_version) == ("not_applied", None)
    assert host.assignment.drift


def test_a_restart_waits_for_leave(fleet_hosts, delivered, kernel_restored):
    fleet_host = fleet_hosts[1]
    host = discovered(fleet_host)
    before = postmaster_pid(fleet_host)
    profile = services.create_profile(name="Bigger buffers", settings={
        "zfs": {}, "module": {}, "sysctl": {}, "postgres": {"shared_buffers": "256MB"}})
    plan = services.make_plan(host, version=profile.current)
    assert plan.needs_restart == ["shared_buffers"]

    assert drive(services.apply_plan(plan)).status == "succeeded"
    change = plan.changes.get()
    assert change.status == PlanChange.Status.AWAITING_RESTART
    assert postmaster_pid(fleet_host) == before and show(fleet_host, "shared_buffers") != "256MB"

    assert drive(services.rollback(plan)[1]).status == "succeeded"
    assert postmaster_pid(fleet_host) == before


def test_a_failure_midway_stops_reports_and_rolls_back(fleet_hosts, delivered, kernel_restored):
    fleet_host = fleet_hosts[1]
    data = fleet_host.pg_data_dataset
    host = discovered(fleet_host)
    atime = zfs_get(fleet_host, "atime", data)
    profile = services.create_profile(name="Half good", settings={
        "zfs": {"data": {"atime": "off" if atime == "on" else "on"}}, "module": {},
        # Inside pg_settings' range, so the profile is valid, but the server's own check
        # refuses it: max_stack_depth must stay below the stack limit (ulimit -s 8192).
        "sysctl": {}, "postgres": {"max_stack_depth": "100MB"}})
    plan = services.make_plan(host, version=profile.current)

    operation = drive(services.apply_plan(plan))
    assert (operation.status, operation.error_code) == ("failed", "change_failed")
    cause, where = operation.error.split("\n")[:2]
    assert "max_stack_depth" in cause and not cause.startswith("Stopped")
    assert where.startswith("Stopped at postgres") and "Applied before it: zfs" in where
    assert "atime" in where
    statuses = {c.key: c.status for c in plan.changes.all()}
    assert statuses == {"atime": "applied", "max_stack_depth": "failed"}
    assert zfs_get(fleet_host, "atime", data) != atime

    assert drive(services.rollback(plan)[1]).status == "succeeded"
    assert zfs_get(fleet_host, "atime", data) == atime
    assert show(fleet_host, "max_stack_depth") == "2MB"


def test_drift_pending_restart_and_the_rollback_of_a_dirty_pair_are_true(
        fleet_hosts, delivered, kernel_restored):
    fleet_host = fleet_hosts[1]
    data = fleet_host.pg_data_dataset
    Path("/proc/sys/vm/dirty_ratio").write_text("20")  # ratio mode: dirty_bytes reads 0
    host = discovered(fleet_host)
    atime = zfs_get(fleet_host, "atime", data)
    flipped = "off" if atime == "on" else "on"
    profile = services.create_profile(name="Dirty bytes, bigger buffers", settings={
        "zfs": {"data": {"atime": flipped}}, "module": {},
        "sysctl": {"vm.dirty_bytes": "512MB"}, "postgres": {"shared_buffers": "256MB"}})
    assignment = services.assign(host, profile)
    assert (assignment.state, assignment.drifted) == ("not_applied", False)
    assert {(d["target"], d["key"]) for d in assignment.drift} >= {(data, "atime")}

    plan = services.make_plan(host)
    assert drive(services.apply_plan(plan)).status == "succeeded"  # no leave to restart
    assert plan.changes.get(key="shared_buffers").status == PlanChange.Status.AWAITING_RESTART
    rediscover(host)
    assignment.refresh_from_db()
    # shared_buffers is written and waits for a restart: pending with its value, not drift.
    assert (assignment.state, assignment.drift) == ("in_line", [])
    pending = [(p["key"], p["current"], p["pending"]) for p in assignment.pending_restart]
    assert pending == [("shared_buffers", show(fleet_host, "shared_buffers"), "256MB")]

    run_on(fleet_host, f"zfs set atime={atime} {data}")  # someone undoes one value by hand
    rediscover(host)
    assignment.refresh_from_db()
    assert assignment.state == "drifted"
    assert [(d["target"], d["key"], d["current"], d["desired"]) for d in assignment.drift] == \
        [(data, "atime", atime, flipped)]

    back, operation = services.rollback(plan)
    rows = {c.key: (c.current, c.desired) for c in back.changes.all()}
    # The kernel zeroed vm.dirty_ratio when vm.dirty_bytes was written: its current is 0.
    assert read_vm()["dirty_ratio"] == "0"
    assert rows["vm.dirty_ratio"] == ("0", "20")
    assert drive(operation).status == "succeeded", operation.error
    assert (read_vm()["dirty_ratio"], read_vm()["dirty_bytes"]) == ("20", "0")
