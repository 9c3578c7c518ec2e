"""Clones on a real test host: made from an existing snapshot or "now", ready with a
password that works from an allowed address, holding their origin snapshot, and
destroyed cleanly. Checked with plain psql and zfs over OpenSSH."""

from __future__ import annotations

import subprocess
import time

import pytest

from apps.clones import services
from apps.clones.models import Clone
from apps.ops.errors import Conflict
from apps.ops.models import Operation
from apps.snapshots import services as snapshot_services
from apps.snapshots.models import Snapshot
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_snapshots import destroy, discovered, psql, run_anyway

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

TABLE = "pozol_cloned"


def connect(clone: Clone, password: str, sql: str) -> str:
    """psql from this machine, over TCP, as the clone's role with its password."""
    done = subprocess.run(
        ["psql", f"postgresql://{clone.role}:{password}@{clone.layout['listen']}:"
                 f"{clone.port}/postgres", "-XAt", "-c", sql],
        capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def host(fleet_hosts):
    fleet_host = fleet_hosts[0]
    psql(fleet_host, f"CREATE TABLE IF NOT EXISTS {TABLE} (id int)")
    psql(fleet_host, f"INSERT INTO {TABLE} SELECT generate_series(1, 321)")
    row = discovered(fleet_host)
    yield fleet_host, row
    for clone in Clone.objects.exclude(state=Clone.State.DESTROYED):
        Clone.objects.filter(pk=clone.pk).update(protected_until=None)
        drive(services.destroy_clone(clone))
    psql(fleet_host, f"DROP TABLE IF EXISTS {TABLE}")
    names = run_anyway(fleet_host, "zfs list -H -t snapshot -o name -r tank/pg").split()
    destroy(fleet_host, *(n for n in names if "@pozol_" in n))


def test_a_clone_from_now_is_ready_with_its_password_and_holds_its_snapshot(host):
    fleet_host, row = host
    cluster = row.clusters.get()
    started = time.monotonic()
    clone, operation, password = services.create_clone(row, cluster, name="dev1")
    operation = drive(operation)
    ready_in = time.monotonic() - started
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    clone.refresh_from_db()
    assert clone.state == Clone.State.READY
    print(f"\nclone ready in {ready_in:.2f} s (request to ready, in-process driver)")

    assert connect(clone, password, f"SELECT count(*) FROM {TABLE}") == "321"
    # It is a copy: writes stay in the clone.
    connect(clone, password, f"INSERT INTO {TABLE} VALUES (0)")
    assert psql(fleet_host, f"SELECT count(*) FROM {TABLE}") == "321"
    # What a copy must not share.
    settings = connect(clone, password, "SELECT current_setting('archive_mode') || ' ' || "
                                        "current_setting('shared_buffers') || ' ' || "
                                        "current_setting('port')")
    assert settings == f"off 128MB {clone.port}"
    bad = subprocess.run(["psql", f"postgresql://{clone.role}:wrong@{clone.layout['listen']}:"
                                  f"{clone.port}/postgres", "-XAtc", "select 1"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "password authentication failed" in bad.stderr
    # The origin snapshot has the clone, in ZFS and in the inventory.
    origin = run_on(fleet_host, "zfs get -H -o value origin tank/pozol_clones/dev1/data")
    origin = origin.strip()
    assert origin == f"tank/pg/data@{clone.snapshot}"
    snap = Snapshot.objects.get(host=row, dataset="tank/pg/data", name=clone.snapshot)
    assert snap.clones == ["tank/pozol_clones/dev1/data"]
    with pytest.raises(Conflict, match="has clones"):
        snapshot_services.destroy(snap, force=True)

    # Reset: a fresh copy of the origin as it is now, same port and password.
    psql(fleet_host, f"INSERT INTO {TABLE} SELECT generate_series(1, 9)")
    time.sleep(1.1)  # snapshot names have a one-second resolution
    before = clone.snapshot
    assert drive(services.reset_clone(clone)).status == Operation.Status.SUCCEEDED
    clone.refresh_from_db()
    assert clone.state == Clone.State.READY and clone.snapshot != before
    assert connect(clone, password, f"SELECT count(*) FROM {TABLE}") == "330"
    old = Snapshot.objects.get(host=row, dataset="tank/pg/data", name=before)
    assert old.clones == []  # the old snapshot no longer has the clone

    drive(services.destroy_clone(clone))
    clone.refresh_from_db()
    assert clone.state == Clone.State.DESTROYED
    assert "pozol_clones/dev1" not in run_on(fleet_host, "zfs list -H -o name")


def test_a_protected_clone_is_not_destroyed_and_an_existing_snapshot_serves(host):
    fleet_host, row = host
    cluster = row.clusters.get()
    taken = drive(snapshot_services.snapshot_now(row, cluster=cluster))
    name = taken.state["snapshot"]
    from datetime import timedelta
    clone, operation, password = services.create_clone(
        row, cluster, snapshot=name, name="dev2", protected_for=timedelta(hours=1))
    assert drive(operation).status == Operation.Status.SUCCEEDED
    with pytest.raises(Conflict, match="protected"):
        services.destroy_clone(clone)
    with pytest.raises(services.CloneRefused, match="is not in the inventory"):
        services.create_clone(row, cluster, snapshot="nope", name="dev3")
