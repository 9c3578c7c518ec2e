"""Clones on a real test host: made from an existing snapshot or "now", ready with a
password that works from an allowed address, holding their origin snapshot, and
destroyed cleanly; idle deletion by the clones tick from the host's real connections.
Checked with plain psql and zfs over OpenSSH."""

from __future__ import annotations

import subprocess
import time
from datetime import timedelta

import psycopg
import pytest
from django.utils import timezone

from apps.clones import services, usage
from apps.clones.models import Clone
from apps.clones.tasks import expire as clones_tick
from apps.common.errors import Conflict
from apps.ops.models import Operation
from apps.snapshots import services as snapshot_services
from apps.snapshots.models import Snapshot
from apps.tenants import services as tenant_services
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_snapshots import destroy, discovered, psql, run_anyway
from tests.tenants import factories as tenants
from tests.waiting import wait_for

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
    # One SSH round trip: room, snapshot, its listing and the clone in one script.
    trips = [line for line in operation.log_lines.values_list("text", flat=True)
             if line.startswith("$ ")]
    assert len(trips) == 1 and trips[0].startswith("$ in one script: check the room"), trips
    # The snapshot is recorded as snapshot now records it: the host's own creation time.
    assert clone.own_snapshots
    for full_name in clone.own_snapshots:
        dataset, _, label = full_name.partition("@")
        recorded = Snapshot.objects.get(host=row, dataset=dataset, name=label)
        creation = run_on(fleet_host, f"zfs get -Hp -o value creation {full_name}").strip()
        assert recorded.created_at.timestamp() == int(creation)
        assert (recorded.origin, recorded.label) == ("pozol", "for clone dev1")

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
    # The old snapshot was taken for the clone ("now"): it went with the old copy.
    assert not Snapshot.objects.filter(host=row, name=before).exists()
    assert f"@{before}" not in run_on(fleet_host, "zfs list -H -t snapshot -o name")

    drive(services.destroy_clone(clone))
    clone.refresh_from_db()
    assert clone.state == Clone.State.DESTROYED
    assert "pozol_clones/dev1" not in run_on(fleet_host, "zfs list -H -o name")


def test_a_protected_clone_is_kept_and_idle_deletion_counts_real_connections(host):
    """From an existing snapshot, in a tenant that deletes clones idle for a minute: the
    clones tick (the task, run here) reads the host's real connections; a clone with a
    client is kept, then destroyed once the client has gone and the clock says long
    ago; the protected one is kept throughout. The clock is moved by setting when a
    clone was last seen active, never by waiting."""
    fleet_host, row = host
    cluster = row.clusters.get()
    acme = tenants.tenant("Acme")
    tenant_services.assign_cluster(acme, row, cluster.data_dir)
    tenant_services.set_quotas(acme, clone_idle_minutes=1)
    taken = drive(snapshot_services.snapshot_now(row, cluster=cluster))
    name = taken.state["snapshot"]
    kept, operation, _ = services.create_clone(
        row, cluster, snapshot=name, name="dev2", protected_for=timedelta(hours=1))
    assert drive(operation).status == Operation.Status.SUCCEEDED
    with pytest.raises(Conflict, match="protected"):
        services.destroy_clone(kept)
    with pytest.raises(services.CloneRefused, match="is not in the inventory"):
        services.create_clone(row, cluster, snapshot="nope", name="dev3")

    used, operation, password = services.create_clone(row, cluster, snapshot=name,
                                                      name="dev3")
    assert drive(operation).status == Operation.Status.SUCCEEDED
    assert {c.tenant_id for c in (kept, used)} == {acme.pk}
    long_ago = timezone.now() - timedelta(hours=1)
    Clone.objects.filter(pk__in=(kept.pk, used.pk)).update(ready_at=long_ago,
                                                          active_at=long_ago)
    with psycopg.connect(host=used.layout["listen"], port=used.port, user=used.role,
                         password=password, dbname="postgres") as client:
        client.execute("SELECT 1")
        assert clones_tick() == 0  # a client is connected to dev3; dev2 is protected
    used.refresh_from_db()
    assert used.state == Clone.State.READY and used.active_at > long_ago
    wait_for(lambda: not usage.connected(used.layout["listen"], used.port, established(
        fleet_host)), 30, "the client's connection to close on the host")

    Clone.objects.filter(pk=used.pk).update(active_at=long_ago)
    assert clones_tick() == 1  # no client now: dev3 goes, dev2 stays
    destroying = Operation.objects.get(kind="clones.destroy", state__clone=used.pk)
    assert destroying.trigger == Operation.Trigger.SCHEDULE
    assert drive(destroying).status == Operation.Status.SUCCEEDED, destroying.error
    assert Clone.objects.get(pk=used.pk).state == Clone.State.DESTROYED
    assert Clone.objects.get(pk=kept.pk).state == Clone.State.READY
    datasets = run_on(fleet_host, "zfs list -H -o name")
    assert "pozol_clones/dev3" not in datasets and "pozol_clones/dev2" in datasets


def established(fleet_host) -> set[tuple[str, int]]:
    """The host's established TCP connections, read over OpenSSH."""
    return usage.parse_established(run_on(fleet_host, "cat /proc/net/tcp /proc/net/tcp6"))

