"""Rollouts on the real test hosts: one that reaches every host, one whose canary fails
and is rolled back (read back over SSH), one that skips a host changed by hand, and
one whose worker is killed midway. A local receiver hears the stopped rollout's event,
signed.

The profiles here touch ZFS properties and PostgreSQL settings only: sysctls are the
kernel's, which every test host shares, so a canary's sysctl would read as a change by
hand on the others.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.alerts.alert_kinds import POOL_HEALTH
from apps.events import sending
from apps.events import services as events
from apps.events.models import Event
from apps.ops import engine
from apps.ops.models import Operation
from apps.rollouts import services
from apps.rollouts.models import Rollout
from apps.tuning import services as tuning
from apps.tuning.models import Plan
from tests.driving import drive
from tests.events.receiver import event_receiver
from tests.integration.conftest import register, run_on, show
from tests.waiting import wait_for
from tests.workers import Worker

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def zfs_get(fleet_host, prop: str) -> str:
    return run_on(fleet_host, f"zfs get -H -o value {prop} {fleet_host.pg_data_dataset}").strip()


def discovered(fleet_host):
    host = register(fleet_host)
    assert drive(host.operations.get()).status == "succeeded"
    host.refresh_from_db()
    return host


def drive_rollout(rollout: Rollout, *, until=None, limit: int = 200,
                  must_end: bool = True) -> Operation:
    """Run the rollout's steps as a worker would, and every child it started between
    them (the test's `delivered` keeps Celery out of it). `until(rollout)` stops early;
    without `must_end`, `limit` steps are all it runs."""
    operation = rollout.operation
    for _ in range(limit):
        operation.refresh_from_db()
        if not operation.is_active:
            return operation
        if until and until(Rollout.objects.get(pk=rollout.pk)):
            return operation
        for child in Operation.objects.filter(status__in=Operation.ACTIVE).exclude(
                pk=operation.pk).order_by("id"):
            drive(child)
        Operation.objects.filter(pk=operation.pk, wake_at__isnull=False).update(
            wake_at=timezone.now())
        engine.run_step(operation.pk, owner="test-driver")
    if must_end:
        raise AssertionError(f"{rollout} did not end in {limit} steps")
    operation.refresh_from_db()
    return operation


def states(rollout: Rollout) -> dict[str, str]:
    return {row.host.name: row.state for row in rollout.hosts.select_related("host")}


def flipped(value: str) -> str:
    return "off" if value == "on" else "on"


def roll_back_everything(rollout: Rollout) -> None:
    """Leave the shared test hosts as the test found them."""
    for row in rollout.hosts.filter(rollback_plan=None).exclude(plan=None):
        plan = Plan.objects.get(pk=row.plan_id)
        if plan.can_roll_back:
            assert drive(tuning.rollback(plan)[1]).status == "succeeded"


def test_a_rollout_that_passes_reaches_every_host(fleet_hosts, delivered):
    hosts = [discovered(fleet_host) for fleet_host in fleet_hosts]
    before = {fh.name: (zfs_get(fh, "atime"), show(fh, "work_mem")) for fh in fleet_hosts}
    atime = flipped(before[fleet_hosts[0].name][0])
    profile = tuning.create_profile(name="Rolled", settings={
        "zfs": {"data": {"atime": atime}}, "module": {}, "sysctl": {},
        "postgres": {"work_mem": "12MB"}})
    rollout = services.start_rollout(profile.current, hosts, wave_size=1)
    try:
        # Paused once the canary passed: steps still run, and no host starts.
        drive_rollout(rollout, until=lambda r: r.wave == 1)
        services.pause(rollout)
        drive_rollout(rollout, limit=3, until=lambda r: False, must_end=False)
        assert states(rollout)[hosts[1].name] == "ready"
        assert rollout.operation.message == "paused before wave 1"
        assert show(fleet_hosts[1], "work_mem") == before[fleet_hosts[1].name][1]
        services.resume(rollout)
        operation = drive_rollout(rollout)
        rollout.refresh_from_db()
        assert operation.status == "succeeded", (operation.error, states(rollout))
        assert rollout.status == Rollout.Status.SUCCEEDED
        assert states(rollout) == {h.name: "done" for h in hosts}
        assert [row.reason for row in rollout.hosts.all()] == ["applied and validated"] * 2
        for fleet_host in fleet_hosts:
            assert zfs_get(fleet_host, "atime") == atime
            assert show(fleet_host, "work_mem") == "12MB"
        logged = "\n".join(operation.log_lines.values_list("text", flat=True))
        assert "select 1" in logged and "the canary passed" in logged
        assert "wave 1 passed" in logged
        told = Event.objects.filter(subject__type="rollout", subject__id=rollout.pk)
        assert sorted((e.kind, e.data["wave"]) for e in told) == [
            ("rollout.wave_done", 0), ("rollout.wave_done", 1)]
    finally:
        roll_back_everything(rollout)
    for fleet_host in fleet_hosts:
        assert (zfs_get(fleet_host, "atime"), show(fleet_host, "work_mem")) == \
            before[fleet_host.name]


def test_a_failing_canary_stops_and_is_rolled_back(fleet_hosts, delivered, enqueued):
    hosts = [discovered(fleet_host) for fleet_host in fleet_hosts]
    canary, other = hosts[1], hosts[0]
    before = {fh.name: zfs_get(fh, "atime") for fh in fleet_hosts}
    profile = tuning.create_profile(name="Half good", settings={
        "zfs": {"data": {"atime": flipped(before[canary.name])}}, "module": {}, "sysctl": {},
        # Inside pg_settings' range, but the server refuses it: max_stack_depth must stay
        # below the stack limit (ulimit -s 8192). The atime before it is applied.
        "postgres": {"max_stack_depth": "100MB"}})
    rollout = services.start_rollout(profile.current, hosts, wave_size=1, canary=canary)
    try:
        with event_receiver() as receiver:
            receiver.secret = events.create_subscription(
                name="rollouts", url=receiver.url,
                events=["rollout.stopped", "rollout.wave_done"]).secret
            operation = drive_rollout(rollout)
            rows = [sending.attempt(pk) for pk in enqueued]
        assert {r.status for r in rows} == {"sent"}, [r.last_error for r in rows]
        assert receiver.refused == 0 and receiver.kinds() == ["rollout.stopped"]
        heard = next(iter(receiver.events.values()))
        assert heard["subject"]["id"] == rollout.pk
        assert heard["data"]["rolled_back"] == [canary.name]
        rollout.refresh_from_db()
        assert (operation.status, operation.error_code) == ("failed", "rollout_stopped")
        assert rollout.status == Rollout.Status.STOPPED
        assert rollout.stop_reason.startswith(f"the canary: {canary.name} failed: apply failed")
        assert "max_stack_depth" in rollout.stop_reason
        assert states(rollout) == {canary.name: "rolled_back", other.name: "ready"}
        row = rollout.hosts.get(host=canary)
        assert row.plan.changes.get(key="atime").status == "rolled_back"
        assert Plan.objects.get(pk=row.rollback_plan_id).status == Plan.Status.APPLIED
        assert other.plans.count() == 0  # the second wave never started
        told = Event.objects.get(subject__type="rollout", subject__id=rollout.pk)
        assert (told.kind, told.data["rolled_back"]) == ("rollout.stopped", [canary.name])
        assert told.data["reason"] == rollout.stop_reason
    finally:
        roll_back_everything(rollout)
    for fleet_host in fleet_hosts:  # read over SSH: as before
        assert zfs_get(fleet_host, "atime") == before[fleet_host.name]


def test_a_host_changed_by_hand_during_the_rollout_is_skipped(fleet_hosts, delivered):
    hosts = [discovered(fleet_host) for fleet_host in fleet_hosts]
    before = {fh.name: zfs_get(fh, "atime") for fh in fleet_hosts}
    profile = tuning.create_profile(name="Logbias", settings={
        "zfs": {"data": {"atime": flipped(before[hosts[0].name])}}, "module": {},
        "sysctl": {}, "postgres": {}})
    rollout = services.start_rollout(profile.current, hosts, wave_size=1)
    late = fleet_hosts[1]
    try:
        drive_rollout(rollout, until=lambda r: r.wave == 1)
        assert states(rollout)[hosts[0].name] == "done"
        # By hand, after the rollout read it: to the profile's own value, even.
        run_on(late, f"zfs set atime={flipped(before[late.name])} {late.pg_data_dataset}")
        operation = drive_rollout(rollout)
        assert operation.status == "succeeded", operation.error
        row = rollout.hosts.get(host=hosts[1])
        assert row.state == "skipped" and row.plan_id is None
        assert row.reason.startswith("changed by hand during the rollout: zfs ")
        assert f"atime: {before[late.name]!r} -> " in row.reason
    finally:
        roll_back_everything(rollout)
        run_on(late, f"zfs set atime={before[late.name]} {late.pg_data_dataset}")
    for fleet_host in fleet_hosts:
        assert zfs_get(fleet_host, "atime") == before[fleet_host.name]


LEASE = "3"


def test_a_rollout_survives_its_worker_killed_midway(fleet_hosts, settings, tmp_path):
    """A real worker runs the rollout and its children and is SIGKILLed while the second
    wave's host is under way; another worker, fed by the sweeper, ends it, and no host
    got a second plan or apply."""
    settings.POZOL = {**settings.POZOL, "OPERATION_LEASE": int(LEASE)}
    hosts = [discovered(fleet_host) for fleet_host in fleet_hosts]
    before = {fh.name: show(fh, "work_mem") for fh in fleet_hosts}
    profile = tuning.create_profile(name="Survives", settings={
        "zfs": {}, "module": {}, "sysctl": {}, "postgres": {"work_mem": "14MB"}})
    second = hosts[1]
    doomed = Worker("tests.worker_app", "doomed", tmp_path, POZOL_OPERATION_LEASE=LEASE)
    try:
        rollout = services.start_rollout(profile.current, hosts, wave_size=1)
        # The first wave (baseline discoveries, an apply, its health check) took over
        # 120 s once under a loaded two-core machine running the suite's guests.
        wait_for(lambda: rollout.hosts.get(host=second).state in
                 {"checking", "applying", "verifying"}, 300, "the second wave to start")
        doomed.kill()
    finally:
        doomed.stop()
    midway = states(rollout)
    assert midway[hosts[0].name] == "done" and midway[second.name] != "done", midway

    rescuer = Worker("tests.worker_app", "rescuer", tmp_path, POZOL_OPERATION_LEASE=LEASE)
    try:
        def ended():
            engine.sweep()
            return not (op := Operation.objects.get(pk=rollout.operation_id)).is_active and op

        operation = wait_for(ended, 300, "the rescuing worker to end the rollout", interval=1)
    finally:
        rescuer.stop()
    try:
        assert operation.status == "succeeded", (operation.error, rescuer.output()[-3000:])
        assert states(rollout) == {h.name: "done" for h in hosts}
        for host in hosts:
            assert host.plans.filter(kind=Plan.Kind.APPLY).count() == 1
            assert host.operations.filter(kind="tuning.apply").count() == 1
        for fleet_host in fleet_hosts:
            assert show(fleet_host, "work_mem") == "14MB"
    finally:
        roll_back_everything(rollout)
    for fleet_host in fleet_hosts:
        assert show(fleet_host, "work_mem") == before[fleet_host.name]


def test_an_alert_in_a_later_wave_stops_it_and_rolls_every_wave_back_when_asked(
        fleet_hosts, delivered):
    """The second wave's host applies, then an alert opens on it before it is validated
    (a pool turning DEGRADED, raised as discovery would): the validation fails, and with
    rollback_earlier_waves the canary that had passed is rolled back too."""
    hosts = [discovered(fleet_host) for fleet_host in fleet_hosts]
    before = {fh.name: zfs_get(fh, "atime") for fh in fleet_hosts}
    profile = tuning.create_profile(name="Alerted", settings={
        "zfs": {"data": {"atime": flipped(before[hosts[0].name])}}, "module": {},
        "sysctl": {}, "postgres": {}})
    rollout = services.start_rollout(profile.current, hosts, wave_size=1,
                                     rollback_earlier_waves=True)
    late = hosts[1]
    try:
        drive_rollout(rollout, until=lambda r: r.hosts.get(host=late).state == "verifying")
        POOL_HEALTH.raise_once(late, "pool tank is DEGRADED")
        operation = drive_rollout(rollout)
        rollout.refresh_from_db()
        assert (operation.status, operation.error_code) == ("failed", "rollout_stopped")
        assert rollout.stop_reason.startswith(f"wave 1: {late.name} failed: validation failed")
        assert "alert pool_health opened: pool tank is DEGRADED" in rollout.stop_reason
        assert states(rollout) == {h.name: "rolled_back" for h in hosts}
        assert rollout.hosts.get(host=hosts[0]).reason == "applied and validated; rolled back"
    finally:
        roll_back_everything(rollout)
    for fleet_host in fleet_hosts:  # read over SSH: both as before
        assert zfs_get(fleet_host, "atime") == before[fleet_host.name]


def test_the_pgbench_validation_measures_before_and_after_on_each_host(fleet_hosts, delivered):
    hosts = [discovered(fleet_host) for fleet_host in fleet_hosts]
    before = {fh.name: zfs_get(fh, "atime") for fh in fleet_hosts}
    profile = tuning.create_profile(name="Measured", settings={
        "zfs": {"data": {"atime": flipped(before[hosts[0].name])}}, "module": {},
        "sysctl": {}, "postgres": {}})
    # zfs-fuse's TPS varies run to run: the test allows any drop; the rule's own edges
    # are tests/rollouts/core's.
    rollout = services.start_rollout(profile.current, hosts, wave_size=1,
                                     validation=Rollout.Validation.PGBENCH,
                                     pgbench_seconds=3, max_tps_drop_percent=100)
    try:
        operation = drive_rollout(rollout, limit=400)
        assert operation.status == "succeeded", (operation.error, states(rollout))
        for row in rollout.hosts.select_related("bench_before", "bench_after"):
            assert row.state == "done"
            assert row.bench_before.tps > 0 and row.bench_after.tps > 0
            assert row.bench_before.operation.finished_at <= row.plan.operation.started_at
            assert row.bench_after.operation.started_at >= row.plan.operation.finished_at
            assert row.reason.startswith("applied and validated; pgbench TPS ")
    finally:
        roll_back_everything(rollout)
    for fleet_host in fleet_hosts:
        assert zfs_get(fleet_host, "atime") == before[fleet_host.name]
