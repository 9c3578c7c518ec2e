"""A customer's clone of Debian's packaged PostgreSQL (17 on OpenZFS 2.3, 15 on 2.1), a
restore drill and a table recovery on it: the packaged layout's configuration carried into
the clone without touching the origin's files, the clone started directly (never through
systemd, which keeps running only the origin's unit)."""

from __future__ import annotations

import shlex

import pytest

from apps.clones import services as clones
from apps.clones.models import Clone
from apps.ops.models import Operation
from apps.snapshots.models import Snapshot
from tests.driving import drive
from tests.integration.test_drills import drill, leftovers, snapshot_now
from tests.integration.test_recover_table import recover
from tests.vm.conftest import run_on
from tests.vm.test_openzfs_host import discovered, psql, unit, unit_pid

pytestmark = [pytest.mark.vm, pytest.mark.django_db(transaction=True)]



@pytest.fixture
def no_clone_left():
    yield
    for clone in Clone.objects.exclude(state=Clone.State.DESTROYED):
        drive(clones.destroy_clone(clone), limit=300)


def connect_inside(vm_host, clone: Clone, password: str, sql: str) -> str:
    """psql over TCP as the clone's role, from the host's own network (inside the VM:
    only its sshd is forwarded to the machine)."""
    url = f"postgresql://{clone.role}:{password}@{clone.layout['listen']}:{clone.port}/postgres"
    return run_on(vm_host, f"cd / && psql {shlex.quote(url)} -XAt -c {shlex.quote(sql)}").strip()


def config_checksums(vm_host) -> str:
    etc = f"/etc/postgresql/{vm_host.pg_major}/main"
    return run_on(vm_host, f"find {etc} -type f | sort | xargs sha256sum")


def test_a_clone_a_drill_and_a_recovery_of_the_packaged_cluster(
        vm, api, delivered, no_clone_left):
    before = config_checksums(vm)
    started_by_systemd = unit_pid(vm)
    host = discovered(vm)
    cluster = host.clusters.get()
    psql(vm, "DROP TABLE IF EXISTS pozol_vm_clone; "
                  "CREATE TABLE pozol_vm_clone AS SELECT generate_series(1, 15) AS id")
    first = snapshot_now(host)

    clone, operation, password = clones.create_clone(host, cluster, name="vmclone",
                                                      snapshot=first)
    operation = drive(operation, limit=600)
    clone.refresh_from_db()
    assert operation.status == Operation.Status.SUCCEEDED, clone.error or operation.error
    assert connect_inside(vm, clone, password, "SELECT count(*) FROM pozol_vm_clone") == "15"
    # Its own configuration, carried from /etc/postgresql, and its own uid; systemd runs
    # only the origin's unit, whose postmaster is the one it started.
    postmaster = [line for line in run_on(vm, "ps -eo uid=,args=").splitlines()
                  if "pozol_clones/vmclone" in line and "-D" in line]
    assert postmaster and int(postmaster[0].split()[0]) == clone.layout["os_uid"]
    assert f"/etc/postgresql/{vm.pg_major}/main" not in postmaster[0]
    units = run_on(vm, "systemctl list-units --no-legend 'postgresql*'")
    assert "vmclone" not in units
    assert unit_pid(vm) == started_by_systemd

    psql(vm, "INSERT INTO pozol_vm_clone SELECT generate_series(16, 20)")
    second = snapshot_now(host)
    reset = drive(clones.reset_clone(clone, snapshot=second), limit=600)
    assert reset.status == Operation.Status.SUCCEEDED, reset.error
    assert connect_inside(vm, clone, password, "SELECT count(*) FROM pozol_vm_clone") == "20"
    assert drive(clones.destroy_clone(clone), limit=300).status == Operation.Status.SUCCEEDED
    assert leftovers(vm, "vmclone") == ""

    created = api.post("/api/drill-schedules/", {"host": host.pk, "cluster": cluster.pk},
                       format="json")
    assert created.status_code == 201, created.content
    passed = drill(api, created.json()["id"])
    assert passed["status"] == "passed", (passed["error"], passed["log_tail"])
    assert leftovers(vm, "pozol-drill") == ""

    psql(vm, "DROP TABLE pozol_vm_clone")
    snapshot = Snapshot.objects.get(host=host, dataset=cluster.data_dataset.name, name=second)
    recovered = recover(api, snapshot, database="postgres", table="pozol_vm_clone",
                        into="pozol_vm_clone_back")
    assert recovered.status == Operation.Status.SUCCEEDED, recovered.error
    assert psql(vm, "SELECT count(*) FROM pozol_vm_clone_back") == "20"
    assert leftovers(vm, "pozol-recover") == ""
    psql(vm, "DROP TABLE pozol_vm_clone_back")

    assert config_checksums(vm) == before  # the origin's files untouched
    assert run_on(vm, f"systemctl is-active {unit(vm)}").strip() == "active"
