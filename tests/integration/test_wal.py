"""WAL archiving on a real test host (issue 23): enabled from its plan through a real
restart, segments archived into PoZoL's dataset, the window and retention from real
snapshots, a gap alerted and narrowing the window, and disabling giving the settings
from before back. Checked with plain psql, zfs and ls over OpenSSH."""

from __future__ import annotations

import time

import pytest

from apps.alerts.models import Alert
from apps.ops.models import Operation
from apps.snapshots import services as snapshot_services
from apps.wal import alerting, services
from apps.wal.core.plan import archive_command
from apps.wal.models import WalArchive, WalMark
from tests.driving import drive
from tests.integration.conftest import run_on, show
from tests.integration.test_snapshots import destroy, discovered, psql, run_anyway
from tests.waiting import wait_for

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

TABLE = "pozol_wal_rows"
ARCHIVE = "tank/pozol_wal/pg:data"


def restart_as_owner(fleet_host) -> None:
    run_on(fleet_host, f"cd / && runuser -u {fleet_host.pg_os_user} -- "
                       f"{fleet_host.pg_bin_dir}/pg_ctl -D {fleet_host.pg_data_dir} -m fast -w "
                       f"restart > /dev/null", timeout=120)


@pytest.fixture
def host(fleet_hosts):
    """A discovered host; afterwards archiving is off whatever happened, and the
    archive, the table and PoZoL's snapshots are gone."""
    fleet_host = fleet_hosts[0]
    psql(fleet_host, f"CREATE TABLE IF NOT EXISTS {TABLE} (id int, at timestamptz "
                     "DEFAULT clock_timestamp())")
    yield fleet_host, discovered(fleet_host)
    from apps.clones import services as clones
    from apps.clones.models import Clone

    for clone in Clone.objects.exclude(state=Clone.State.DESTROYED):
        drive(clones.destroy_clone(clone))
    if show(fleet_host, "archive_mode") != "off":
        for name in ("archive_mode", "archive_command", "archive_timeout"):
            psql(fleet_host, f"ALTER SYSTEM RESET {name}")
        restart_as_owner(fleet_host)
    psql(fleet_host, f"DROP TABLE IF EXISTS {TABLE}")
    # The archiver's counters outlive a restart: a fault test's failures are not the next's.
    psql(fleet_host, "SELECT pg_stat_reset_shared('archiver')")
    run_on(fleet_host, "i=0; while zfs list tank/pozol_wal > /dev/null 2>&1; do "
                       "zfs destroy -r tank/pozol_wal && break; i=$((i+1)); "
                       "[ $i -ge 40 ] && exit 1; sleep 0.25; done")
    names = run_anyway(fleet_host, "zfs list -H -t snapshot -o name -r tank/pg").split()
    destroy(fleet_host, *(n for n in names if "@pozol_" in n))


def archived(fleet_host, directory: str) -> list[str]:
    out = run_on(fleet_host, f"ls {directory}")
    return sorted(name for name in out.split() if len(name) == 24)


def new_segment(fleet_host, rows: int) -> str:
    """Insert rows, then switch to a new segment: the one just left goes to the archive."""
    psql(fleet_host, f"INSERT INTO {TABLE} (id) SELECT generate_series(1, {rows})")
    return psql(fleet_host, "SELECT pg_walfile_name(pg_switch_wal())")


def test_archiving_on_window_retention_gap_and_off(host):
    fleet_host, row = host
    cluster = row.clusters.get()
    before = {name: show(fleet_host, name) for name in
              ("archive_mode", "archive_command", "archive_timeout")}
    assert before["archive_mode"] == "off"

    plan = services.plan_enable(cluster, 30)
    assert plan.dataset == ARCHIVE and plan.restart and plan.create_dataset
    with pytest.raises(services.WalRefused, match="between 10 and 3600"):
        services.plan_enable(cluster, 5)

    archive, operation = services.enable(cluster, 30)
    operation = drive(operation)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    assert archive.state == WalArchive.State.ON
    assert show(fleet_host, "archive_mode") == "on"
    assert show(fleet_host, "archive_timeout") == "30s"
    # Read back as written: ALTER SYSTEM and postgresql.auto.conf keep its quotes and %%.
    assert show(fleet_host, "archive_command") == archive_command(archive.directory)
    assert run_on(fleet_host, f"zfs get -H -o value compression {ARCHIVE}").strip() == "on"
    owner = run_on(fleet_host, f"stat -c '%U %a' {archive.directory}").split()
    assert owner == [fleet_host.pg_os_user, "700"]
    logged = " ".join(line.text for line in operation.log_lines.all())
    assert "restart" in logged

    # Segments reach the archive; a snapshot taken now is marked in WAL.
    first = new_segment(fleet_host, 10)
    wait_for(lambda: first in archived(fleet_host, archive.directory), 30,
             "the first segment to be archived")
    time.sleep(1.1)  # the snapshot's second must be after the first segment's archive time
    taken = drive(snapshot_services.snapshot_now(row, cluster=cluster))
    assert taken.status == Operation.Status.SUCCEEDED, taken.error
    assert WalMark.objects.filter(archive=archive, snapshot=taken.state["snapshot"]).exists()
    names = [new_segment(fleet_host, 10) for _ in range(4)]
    wait_for(lambda: set(names) <= set(archived(fleet_host, archive.directory)), 60,
             "four more segments to be archived")

    checked = drive(services.check(archive))
    assert checked.status == Operation.Status.SUCCEEDED, checked.error
    archive.refresh_from_db()
    # The segment archived before the snapshot is no snapshot's: retention removed it.
    assert archive.removed >= 1 and first not in archived(fleet_host, archive.directory)
    assert archive.failed_count == 0 and archive.last_archived_wal
    assert archive.space_used and archive.segments >= 4 and not archive.gaps
    assert len(archive.window) == 1
    since, until = archive.window[0]
    assert since < until <= time.time() + 1
    print(f"\nwindow: {archive.spans}")

    # A gap: a segment in the middle goes missing; the window ends before it.
    missing = names[1]
    run_on(fleet_host, f"rm {archive.directory}/{missing}")
    assert drive(services.check(archive)).status == Operation.Status.SUCCEEDED
    archive.refresh_from_db()
    assert archive.gaps and archive.gaps[0]["first"] == missing
    assert archive.window[0][1] < until
    alert = Alert.objects.get(host=row, kind=alerting.KIND, resolved_at=None)
    assert missing in alert.message

    # Off: the settings from before are back; the archive is kept.
    back = drive(services.disable(archive))
    assert back.status == Operation.Status.SUCCEEDED, back.error
    archive.refresh_from_db()
    assert archive.state == WalArchive.State.OFF
    assert {name: show(fleet_host, name) for name in before} == before
    assert archived(fleet_host, archive.directory)
    assert not Alert.objects.filter(host=row, kind=alerting.KIND, resolved_at=None).exists()


def test_a_clone_to_a_moment_between_two_inserts_holds_the_first_only(host):
    """Issue 23's proof: rows inserted with their commit times, a clone asked for a
    moment between two of them shows exactly the rows committed before it."""
    from datetime import UTC, datetime, timedelta

    from apps.clones import services as clones
    from apps.clones.models import Clone
    from tests.integration.test_clones import connect

    fleet_host, row = host
    cluster = row.clusters.get()
    archive, operation = services.enable(cluster, 10)
    assert drive(operation).status == Operation.Status.SUCCEEDED
    archive.refresh_from_db()
    taken = drive(snapshot_services.snapshot_now(row, cluster=cluster))
    assert taken.status == Operation.Status.SUCCEEDED, taken.error
    time.sleep(1.1)
    psql(fleet_host, f"INSERT INTO {TABLE} (id) VALUES (1)")
    moment = datetime.fromtimestamp(float(psql(
        fleet_host, "SELECT extract(epoch from clock_timestamp())")), UTC)
    position = psql(fleet_host, "SELECT pg_current_wal_lsn()")
    point = drive(services.create_restore_point(archive, "after-row-1"))
    assert point.status == Operation.Status.SUCCEEDED, point.error
    time.sleep(1.1)
    psql(fleet_host, f"INSERT INTO {TABLE} (id) VALUES (2)")
    last = new_segment(fleet_host, 1)
    wait_for(lambda: last in archived(fleet_host, archive.directory), 30, "the segment")
    assert drive(services.check(archive)).status == Operation.Status.SUCCEEDED
    archive.refresh_from_db()
    assert archive.window and archive.window[-1][0] < moment.timestamp() < archive.window[-1][1]

    with pytest.raises(clones.CloneRefused, match="outside the recoverable window: any moment"):
        clones.create_clone(row, cluster, name="late", at=moment - timedelta(days=1))
    with pytest.raises(clones.CloneRefused, match="in the future"):
        clones.create_clone(row, cluster, name="late", at=moment + timedelta(days=1))

    clone, operation, password = clones.create_clone(row, cluster, name="pitr1", at=moment)
    operation = drive(operation)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    clone.refresh_from_db()
    assert clone.state == Clone.State.READY and clone.snapshot == taken.state["snapshot"]
    assert connect(clone, password, f"SELECT string_agg(id::text, ',' ORDER BY id) FROM "
                                    f"{TABLE} WHERE id IN (1, 2)") == "1"
    assert clone.reached_at is not None and clone.reached_at <= moment
    assert (moment - clone.reached_at).total_seconds() < 2 and clone.reached_note == ""
    # The archive's clone was only needed while replaying.
    datasets = run_on(fleet_host, "zfs list -H -t all -o name")
    assert "pozol_clones/pitr1/wal_archive" not in datasets
    assert f"{ARCHIVE}@pozol-pitr-pitr1" not in datasets
    assert drive(clones.destroy_clone(clone)).status == Operation.Status.SUCCEEDED

    # The same moment by its WAL position, and by the restore point made there.
    for name, asked in (("pitr2", {"lsn": position}), ("pitr3", {"restore_point":
                                                                  "after-row-1"})):
        clone, operation, password = clones.create_clone(row, cluster, name=name, **asked)
        operation = drive(operation)
        assert operation.status == Operation.Status.SUCCEEDED, operation.error
        clone.refresh_from_db()
        assert connect(clone, password, f"SELECT string_agg(id::text, ',' ORDER BY id) FROM "
                                        f"{TABLE} WHERE id IN (1, 2)") == "1", asked
        assert drive(clones.destroy_clone(clone)).status == Operation.Status.SUCCEEDED
    assert drive(services.disable(archive)).status == Operation.Status.SUCCEEDED


def test_a_dropped_table_comes_back_as_of_a_moment_between_two_rows(host, api):
    """Issue 23: rows inserted with their commit times, the table dropped, recovered as
    of a moment between two rows: exactly the rows committed before it come back."""
    from datetime import UTC, datetime

    fleet_host, row = host
    cluster = row.clusters.get()
    into = f"{TABLE}_back"
    archive, operation = services.enable(cluster, 10)
    assert drive(operation).status == Operation.Status.SUCCEEDED
    archive.refresh_from_db()
    taken = drive(snapshot_services.snapshot_now(row, cluster=cluster))
    assert taken.status == Operation.Status.SUCCEEDED, taken.error
    time.sleep(1.1)
    psql(fleet_host, f"INSERT INTO {TABLE} (id) VALUES (1), (2)")
    time.sleep(0.5)
    moment = datetime.fromtimestamp(float(psql(
        fleet_host, "SELECT extract(epoch from clock_timestamp())")), UTC)
    time.sleep(0.5)
    psql(fleet_host, f"INSERT INTO {TABLE} (id) VALUES (3)")
    psql(fleet_host, f"DROP TABLE {TABLE}")
    last = psql(fleet_host, "SELECT pg_walfile_name(pg_switch_wal())")
    wait_for(lambda: last in archived(fleet_host, archive.directory), 30, "the segment")
    assert drive(services.check(archive)).status == Operation.Status.SUCCEEDED
    try:
        response = api.post(f"/api/clusters/{cluster.pk}/recover-table/",
                             {"database": "postgres", "table": TABLE, "into": into,
                              "at": moment.isoformat()}, format="json")
        assert response.status_code == 202, response.content
        done = drive(Operation.objects.get(pk=response.json()["id"]))
        assert done.status == Operation.Status.SUCCEEDED, done.error
        assert done.result["rows"] == 2 and done.result["snapshot"] == taken.state["snapshot"]
        assert psql(fleet_host, f"SELECT string_agg(id::text, ',' ORDER BY id) FROM {into}"
                    ) == "1,2"
        reached = datetime.fromisoformat(done.result["reached_at"])
        assert reached <= moment and (moment - reached).total_seconds() < 2
        datasets = run_on(fleet_host, "zfs list -H -t all -o name")
        assert "pozol-recover" not in datasets and "@pozol-pitr-" not in datasets
        # A moment outside the window is refused before anything is made.
        refused = api.post(f"/api/clusters/{cluster.pk}/recover-table/",
                           {"database": "postgres", "table": TABLE, "into": "x",
                            "at": "2020-01-01T00:00:00Z"}, format="json")
        assert refused.status_code == 400
        assert "outside the recoverable window" in refused.json()["error"]["message"]
    finally:
        psql(fleet_host, f"DROP TABLE IF EXISTS {into}")


def test_a_drill_to_a_random_moment_reaches_it_and_the_tick_reads_without_operations(host):
    """Issue 23: a restore drill to a moment drawn in the window passes, its replay's
    last transaction within archive_timeout before the moment; the routine tick read
    the archive that window came from without an operation of its own, but for the
    one that removed what no snapshot needs."""
    import threading

    from django.utils import timezone

    from apps.drills import services as drills
    from apps.drills.models import DrillRun, DrillSchedule
    from tests.integration.test_drills import leftovers

    fleet_host, row = host
    cluster = row.clusters.get()
    archive, operation = services.enable(cluster, 10)
    assert drive(operation).status == Operation.Status.SUCCEEDED
    stop = threading.Event()

    def write() -> None:  # a commit every few tenths of a second, whatever is drawn
        while not stop.is_set():
            psql(fleet_host, f"INSERT INTO {TABLE} (id) VALUES (1)")
            time.sleep(0.2)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        time.sleep(1.5)
        taken = drive(snapshot_services.snapshot_now(row, cluster=cluster))
        assert taken.status == Operation.Status.SUCCEEDED, taken.error
        time.sleep(6)
    finally:
        stop.set()
        writer.join(30)
    archive.refresh_from_db()
    last = psql(fleet_host, "SELECT pg_walfile_name(pg_switch_wal())")
    # The archive command syncs twice on zfs-fuse: slow on a loaded machine.
    wait_for(lambda: last in archived(fleet_host, archive.directory), 90, "the segment")

    before = Operation.objects.filter(kind="wal.check").count()
    started = services.tick(timezone.now() + timezone.timedelta(hours=1))
    for check in started:  # only to remove the segments archived before the snapshot
        assert drive(check).status == Operation.Status.SUCCEEDED, check.error
        assert check.result["removed"] >= 1
    again = services.tick(timezone.now() + timezone.timedelta(hours=2))
    assert again == [] and Operation.objects.filter(kind="wal.check").count() == before + len(
        started)
    archive.refresh_from_db()
    assert archive.window and archive.checked_at > timezone.now() - timezone.timedelta(
        seconds=30)
    since, until = archive.window[-1]
    print(f"\nwindow: {archive.spans}")

    schedule = drills.save_schedule(host=row, cluster=cluster, target="random_moment")
    for _ in range(2):
        run = drills.run_now(schedule)
        assert run.operation is not None, run.error
        drive(run.operation)
        run.refresh_from_db()
        assert run.status == DrillRun.Status.PASSED, (run.error, run.log_tail)
        moment = run.target_time.timestamp()
        assert since <= moment <= until and run.snapshot == taken.state["snapshot"]
        assert run.reached_at is not None and run.archive_timeout == 10
        assert 0 <= moment - run.reached_at.timestamp() <= 10
        print(f"drill #{run.pk}: moment {run.target_time.isoformat()}, reached "
              f"{run.reached_at.isoformat()} ({moment - run.reached_at.timestamp():.3f} s "
              f"before), {run.total_seconds:.1f} s")
        assert leftovers(fleet_host, run.clone_name) == ""
    assert "@pozol-pitr-" not in run_on(fleet_host, "zfs list -H -t snapshot -o name")
    DrillSchedule.objects.all().delete()
