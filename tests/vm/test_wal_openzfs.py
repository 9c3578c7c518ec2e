"""WAL archiving and a clone to a moment on Debian's packaged PostgreSQL 17 on OpenZFS:
archiving turned on restarts the cluster through its own systemd unit, a clone asked
for a moment between two rows holds the first only, and turning archiving off gives
the cluster its settings back (issue 23's proof on the real host)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from apps.clones import services as clones
from apps.clones.models import Clone
from apps.ops.models import Operation
from apps.wal import services
from tests.driving import drive
from tests.integration.test_drills import snapshot_now
from tests.vm.conftest import run_on
from tests.vm.test_clones_openzfs import connect_inside, no_clone_left  # noqa: F401
from tests.vm.test_openzfs_host import discovered, psql, unit_pid
from tests.waiting import wait_for

pytestmark = [pytest.mark.vm, pytest.mark.django_db(transaction=True)]

TABLE = "pozol_vm_wal"
SETTINGS = ("archive_mode", "archive_command", "archive_timeout")


def test_archiving_and_a_clone_to_a_moment_of_the_packaged_cluster(
        vm_host, delivered, no_clone_left):  # noqa: F811
    host = discovered(vm_host)
    cluster = host.clusters.get()
    before = {name: psql(vm_host, f"show {name}") for name in SETTINGS}
    started_by_systemd = unit_pid(vm_host)

    archive, operation = services.enable(cluster, 10)
    operation = drive(operation, limit=600)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    assert psql(vm_host, "show archive_mode") == "on"
    # Restarted by its own unit: systemd's main PID is the new postmaster.
    assert unit_pid(vm_host) not in (0, started_by_systemd)
    assert run_on(vm_host, "systemctl is-active postgresql@17-main").strip() == "active"

    psql(vm_host, f"DROP TABLE IF EXISTS {TABLE}; CREATE TABLE {TABLE} (id int)")
    snapshot = snapshot_now(host)
    time.sleep(1.1)
    psql(vm_host, f"INSERT INTO {TABLE} VALUES (1)")
    moment = datetime.fromtimestamp(float(psql(
        vm_host, "SELECT extract(epoch from clock_timestamp())")), UTC)
    time.sleep(1.1)
    psql(vm_host, f"INSERT INTO {TABLE} VALUES (2)")
    segment = psql(vm_host, "SELECT pg_walfile_name(pg_switch_wal())")
    wait_for(lambda: segment in run_on(vm_host, f"ls {archive.directory}"), 180,
             f"segment {segment} in the archive")
    checked = drive(services.check(archive), limit=300)
    assert checked.status == Operation.Status.SUCCEEDED, checked.error
    archive.refresh_from_db()
    assert archive.window and archive.window[-1][0] < moment.timestamp() < archive.window[-1][1]

    clone, operation, password = clones.create_clone(host, cluster, name="vmpitr", at=moment)
    operation = drive(operation, limit=900)
    clone.refresh_from_db()
    assert operation.status == Operation.Status.SUCCEEDED, clone.error or operation.error
    assert clone.state == Clone.State.READY and clone.snapshot == snapshot
    assert connect_inside(vm_host, clone, password,
                          f"SELECT string_agg(id::text, ',' ORDER BY id) FROM {TABLE}") == "1"
    assert clone.reached_at is not None and clone.reached_at <= moment
    assert drive(clones.destroy_clone(clone), limit=300).status == Operation.Status.SUCCEEDED

    operation = drive(services.disable(archive), limit=600)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert {name: psql(vm_host, f"show {name}") for name in SETTINGS} == before
    assert run_on(vm_host, "systemctl is-active postgresql@17-main").strip() == "active"
