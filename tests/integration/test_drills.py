"""Restore drills, clone faults and the orphan reconciler on a real test host.

A drill passes on a healthy snapshot and fails, with PostgreSQL's log tail and the
host's alert, on a snapshot broken as a careless hand-made one is: the WAL dataset
snapshotted, then a WAL switch and a checkpoint, then the data dataset (its
pg_control names a checkpoint the WAL snapshot never saw). A clone of that snapshot
fails the same way, as does one whose snapshot was destroyed by hand after the
request, or whose host stopped answering: each with a clear error and nothing left
on the host. The reconciler removes a clone the database lost, postmaster and
datasets, once past the grace period, and leaves another control plane's alone.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from apps.alerts.models import Alert
from apps.clones import services as clone_services
from apps.clones.models import Clone
from apps.drills import reconcile
from apps.drills.models import DrillRun
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.remote import ssh as product_ssh
from apps.snapshots import services as snapshot_services
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_snapshots import destroy, discovered, psql, run_anyway

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

BROKEN = "drill_broken"
TABLE = "pozol_drill_rows"


@pytest.fixture
def host(fleet_hosts):
    fleet_host = fleet_hosts[0]
    row = discovered(fleet_host)
    yield fleet_host, row
    for clone in Clone.objects.exclude(state=Clone.State.DESTROYED):
        drive(clone_services.destroy_clone(clone))
    psql(fleet_host, f"DROP TABLE IF EXISTS {TABLE}")
    # zfs-fuse holds a new mount busy for a moment.
    run_anyway(fleet_host, "i=0; while zfs list tank/pozol_clones/foreign > /dev/null 2>&1; "
                           "do zfs destroy -r tank/pozol_clones/foreign && break; "
                           "i=$((i+1)); [ $i -ge 40 ] && break; sleep 0.25; done")
    names = run_anyway(fleet_host, "zfs list -H -t snapshot -o name -r tank/pg").split()
    destroy(fleet_host, *(n for n in names if "@pozol_" in n or f"@{BROKEN}" in n))


def leftovers(fleet_host, name: str) -> str:
    """Datasets and postmasters of a clone still on the host ("" when none)."""
    datasets = [line for line in run_on(fleet_host, "zfs list -H -o name").split()
                if f"pozol_clones/{name}" in line]
    processes = [line for line in run_on(fleet_host, "ps -eo args=").splitlines()
                 if f"pozol_clones/{name}" in line]
    return "\n".join(datasets + processes)


def snapshot_now(row: Host) -> str:
    time.sleep(1.1)  # snapshot names and creation times have a one-second resolution
    operation = drive(snapshot_services.snapshot_now(row, cluster=row.clusters.get()))
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    return operation.state["snapshot"]


def break_a_snapshot(fleet_host, row: Host) -> None:
    """@drill_broken: WAL first, then a WAL switch and a checkpoint, then the data."""
    psql(fleet_host, f"CREATE TABLE {TABLE} AS SELECT generate_series(1, 1000) AS i")
    time.sleep(1.1)
    run_on(fleet_host, f"zfs snapshot tank/pg/wal@{BROKEN}")
    psql(fleet_host, f"INSERT INTO {TABLE} SELECT generate_series(1, 1000)")
    psql(fleet_host, "SELECT pg_switch_wal()")
    psql(fleet_host, "CHECKPOINT")
    run_on(fleet_host, f"zfs snapshot tank/pg/data@{BROKEN}")
    assert drive(snapshot_services.start_refresh(row)).status == Operation.Status.SUCCEEDED


def drill(api, schedule_id: int) -> dict:
    response = api.post(f"/api/drill-schedules/{schedule_id}/run/")
    assert response.status_code == 202, response.content
    drive(Operation.objects.get(pk=response.json()["operation"]))
    return api.get(f"/api/drills/{response.json()['id']}/").json()


def open_alert(row: Host) -> Alert | None:
    return row.open_alerts.filter(kind="restore_drill_failed").first()


def test_a_drill_passes_on_a_healthy_snapshot_and_fails_with_the_alert_on_a_broken_one(
        api, host):
    fleet_host, row = host
    cluster = row.clusters.get()
    snapshot_now(row)
    created = api.post("/api/drill-schedules/", {"host": row.pk, "cluster": cluster.pk},
                       format="json")
    assert created.status_code == 201, created.content
    schedule = created.json()["id"]

    passed = drill(api, schedule)
    assert passed["status"] == "passed", passed["error"]
    assert {"postgres", "template1"} <= set(passed["answers"])
    assert int(passed["answers"]["postgres"]) > 1000  # pg_class x pg_attribute rows
    for part in ("clone", "start", "check", "destroy", "total"):
        assert passed[f"{part}_seconds"] > 0, part
    print(f"\ndrill passed: clone {passed['clone_seconds']:.2f} s, start "
          f"{passed['start_seconds']:.2f} s, check {passed['check_seconds']:.2f} s, "
          f"destroy {passed['destroy_seconds']:.2f} s")
    assert leftovers(fleet_host, "pozol-drill") == ""
    assert open_alert(row) is None

    break_a_snapshot(fleet_host, row)
    failed = drill(api, schedule)
    assert failed["status"] == "failed" and failed["snapshot"] == BROKEN
    assert "clone or start failed" in failed["error"]
    assert "checkpoint record" in failed["log_tail"], failed["log_tail"]
    assert leftovers(fleet_host, "pozol-drill") == ""
    alert = open_alert(row)
    assert alert is not None and f"#{failed['id']}" in alert.message and BROKEN in alert.message
    page = api.get(f"/api/drills/?host={row.pk}&status=failed").json()
    assert [r["id"] for r in page["results"]] == [failed["id"]]

    # A member's clone of the same snapshot fails the same way, its log tail in the error.
    clone, operation, _ = clone_services.create_clone(row, cluster, snapshot=BROKEN,
                                                      name="broken")
    operation = drive(operation)
    clone.refresh_from_db()
    assert operation.status == Operation.Status.FAILED and clone.state == Clone.State.FAILED
    assert "server log ends" in clone.error and "checkpoint record" in clone.error
    assert leftovers(fleet_host, "broken") == ""

    destroy(fleet_host, f"tank/pg/wal@{BROKEN}", f"tank/pg/data@{BROKEN}")
    drive(snapshot_services.start_refresh(row))
    snapshot_now(row)
    again = drill(api, schedule)
    assert again["status"] == "passed", again["error"]
    assert open_alert(row) is None  # resolved by the passing drill
    assert DrillRun.objects.filter(schedule=schedule).count() == 3  # the history is kept


def test_a_clone_whose_snapshot_or_host_went_away_fails_clearly_and_leaves_nothing(host):
    fleet_host, row = host
    cluster = row.clusters.get()
    name = snapshot_now(row)

    # The snapshot destroyed by hand between the request and the work.
    clone, operation, _ = clone_services.create_clone(row, cluster, snapshot=name,
                                                      name="gone")
    destroy(fleet_host, f"tank/pg/data@{name}", f"tank/pg/wal@{name}")
    operation = drive(operation)
    clone.refresh_from_db()
    assert operation.status == Operation.Status.FAILED and clone.state == Clone.State.FAILED
    assert "does not exist" in clone.error, clone.error
    assert leftovers(fleet_host, "gone") == ""
    Clone.objects.filter(pk=clone.pk).update(state=Clone.State.DESTROYED)

    # The host stops answering between the request and the work.
    name = snapshot_now(row)
    clone, operation, _ = clone_services.create_clone(row, cluster, snapshot=name,
                                                      name="away")
    Host.objects.filter(pk=row.pk).update(address="127.0.82.250")
    product_ssh.close_all()
    try:
        operation = drive(operation)
    finally:
        Host.objects.filter(pk=row.pk).update(address=row.address)
        product_ssh.close_all()
    clone.refresh_from_db()
    assert operation.status == Operation.Status.FAILED and clone.state == Clone.State.FAILED
    assert "127.0.82.250" in operation.error and clone.error == operation.error
    assert leftovers(fleet_host, "away") == ""
    Clone.objects.filter(pk=clone.pk).update(state=Clone.State.DESTROYED)


def test_the_reconciler_removes_a_lost_clone_past_the_grace_period(host, settings):
    fleet_host, row = host
    name = snapshot_now(row)
    clone, operation, _ = clone_services.create_clone(row, row.clusters.get(), snapshot=name,
                                                      name="lost")
    assert drive(operation).status == Operation.Status.SUCCEEDED
    assert "pozol:owner\tpozol" in run_on(
        fleet_host, "zfs get -H -o name,property,value pozol:owner tank/pozol_clones/lost/data")
    Clone.objects.filter(pk=clone.pk).delete()  # the database forgot it
    run_on(fleet_host, "zfs clone -p -o pozol:clone=foreign -o pozol:owner=elsewhere "
                       f"tank/pg/data@{name} tank/pozol_clones/foreign/data")
    assert "postgres" in leftovers(fleet_host, "lost")  # its postmaster runs

    young = drive(reconcile.reconcile(row)).result
    assert young["kept"] == {"lost": "younger than the grace period"}
    assert young["removed"] == [] and "foreign" not in young["kept"]

    settings.POZOL = {**settings.POZOL, "ORPHAN_GRACE_MINUTES": 0}
    done = drive(reconcile.reconcile(row))
    assert done.status == Operation.Status.SUCCEEDED, done.error
    assert done.result["removed"] == ["lost"], done.result
    assert leftovers(fleet_host, "lost") == ""
    assert "pozol_clones/foreign" in run_on(fleet_host, "zfs list -H -o name")


def test_a_worker_killed_while_making_or_destroying_a_clone_is_survived_without_orphans(
        host, settings, tmp_path):
    """The worker is SIGKILLed once the clone's dataset exists (its script is running:
    crash recovery of unflushed WAL keeps it busy); the sweeper re-delivers the step,
    which removes what the first attempt made and makes the clone again. Then the same
    while destroying it: the worker dies once the clone's PostgreSQL is stopped and
    while `zfs destroy` waits for a mount a process holds busy (zfs-fuse's own busy
    moment, made long). The first run's script lives on on the host (a remote command
    outlives its client) and may finish the work itself; either way the re-delivered
    step (run in this process once the lease is out) ends with the datasets and the
    socket directory gone, the clone destroyed."""
    from apps.ops import engine
    from apps.remote.commands import cmd
    from tests.waiting import wait_for
    from tests.workers import Worker

    lease = "3"
    settings.POZOL = {**settings.POZOL, "OPERATION_LEASE": int(lease)}
    fleet_host, row = host
    psql(fleet_host, f"CREATE TABLE {TABLE} AS SELECT generate_series(1, 300000) AS i")
    name = snapshot_now(row)
    watch = product_ssh.session(row.ssh_target())
    doomed = Worker("tests.worker_app", "doomed", tmp_path, POZOL_OPERATION_LEASE=lease)
    try:
        clone, operation, password = clone_services.create_clone(
            row, row.clusters.get(), snapshot=name, name="killed")
        wait_for(lambda: "pozol_clones/killed/data" in watch(
            cmd("zfs", "list", "-H", "-o", "name"), check=False).stdout, 60,
                 "the clone's dataset (the create script running)", interval=0.02)
        doomed.kill()
    finally:
        doomed.stop()
    print(f"\nkilled with the clone {Clone.objects.get(pk=clone.pk).state}, "
          f"postmasters: {leftovers(fleet_host, 'killed').count('bin/postgres')}")
    assert Operation.objects.get(pk=operation.pk).status == Operation.Status.RUNNING

    holder = ""
    rescuer = Worker("tests.worker_app", "rescuer", tmp_path, POZOL_OPERATION_LEASE=lease)
    try:
        time.sleep(int(lease) + 0.5)  # the lease must run out before a sweep takes it
        assert operation.pk in wait_for(engine.sweep, 30, "the sweeper to find the step")
        done = wait_for(lambda: (op := Operation.objects.get(pk=operation.pk)).is_active
                        is False and op, 120, "the rescuing worker to finish")
        assert done.status == Operation.Status.SUCCEEDED, rescuer.output()[-3000:]
        assert done.attempts == 2
        clone.refresh_from_db()
        assert clone.state == Clone.State.READY
        # One postmaster (the second attempt's), and the clone answers with its password.
        assert leftovers(fleet_host, "killed").count("bin/postgres") == 1
        answered = subprocess.run(
            ["psql", f"postgresql://{clone.role}:{password}@{clone.layout['listen']}:"
                     f"{clone.port}/postgres", "-XAtc", f"SELECT count(*) FROM {TABLE}"],
            capture_output=True, text=True, timeout=30)
        assert answered.stdout.strip() == "300000", answered.stderr

        destroy_began = time.monotonic()
        # Destroying it: a process sits in the clone's mount, so the destroy script stops
        # PostgreSQL and then retries `zfs destroy`; the worker running it dies there.
        mount = run_on(fleet_host, "zfs get -H -o value mountpoint "
                                   "tank/pozol_clones/killed/data").strip()
        holder = run_on(fleet_host, f"cd {mount} && {{ sleep 300 < /dev/null > /dev/null "
                                    "2>&1 & echo $!; }").strip()
        destroying = clone_services.destroy_clone(clone)  # the rescuer takes it
        wait_for(lambda: "bin/postgres" not in leftovers(fleet_host, "killed"), 60,
                 "the destroy to stop the clone's PostgreSQL")
        rescuer.kill()
        assert "pozol_clones/killed/data" in leftovers(fleet_host, "killed")  # half done
        assert Operation.objects.get(pk=destroying.pk).status == Operation.Status.RUNNING
        assert Clone.objects.get(pk=clone.pk).state == Clone.State.DESTROYING
    finally:
        rescuer.stop()
        if holder:
            run_anyway(fleet_host, f"kill {holder}")

    # The re-delivered step runs here, in this process: the engine's path is a worker's
    # (claim after the lease, run, record), without starting a third worker.
    time.sleep(int(lease) + 0.5)
    assert destroying.pk in engine.sweep()
    done = drive(destroying)
    assert done.status == Operation.Status.SUCCEEDED, done.error
    assert done.attempts == 2
    assert done.log_lines.filter(text__contains="expired; re-running step").exists()
    rerun = done.log_lines.filter(text__contains="destroy tank/pozol_clones/killed").last()
    print(f"\nthe re-delivered destroy: {rerun.text if rerun else 'no command'}; the "
          f"destroy's part of the test took {time.monotonic() - destroy_began:.1f} s")
    assert Clone.objects.get(pk=clone.pk).state == Clone.State.DESTROYED
    assert leftovers(fleet_host, "killed") == ""
    socket_dir = clone.layout["socket_dir"]
    assert run_on(fleet_host, f"test -e {socket_dir} && echo left || echo gone").strip() \
        == "gone"
