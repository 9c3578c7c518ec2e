"""WAL archiving's faults (issue 23) on a real test host, checked with plain psql, zfs
and ls over OpenSSH: the archive command failing (the archive's directory made
unwritable for PostgreSQL's user) and the archive full (an operator's quota): each is
alerted with the segment it concerns (and, when full, that there is no space),
PostgreSQL keeps the segments and retries, and once fixed they are archived: nothing
is lost, no gap, the alert resolves. A worker killed while a point-in-time clone
replays is survived without leftovers, and replay snapshots left behind go unless a
clone still reads them."""

from __future__ import annotations

import pytest

from apps.alerts.models import Alert
from apps.ops.models import Operation
from apps.wal import alerting, services
from apps.wal.models import WalArchive
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_snapshots import psql
from tests.integration.test_wal import archived, host, new_segment  # noqa: F401 (fixture)
from tests.waiting import wait_for

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]
# Until a startup process replays ([s]: not this command's own line).
WATCH_REPLAY = "until ps -eo args= | grep -q '[s]tartup recovering'; do sleep 0.005; done"


def failed_count(fleet_host) -> int:
    return int(psql(fleet_host, "SELECT failed_count FROM pg_stat_archiver"))


def test_a_failing_archive_command_is_alerted_and_loses_no_wal(host):  # noqa: F811
    fleet_host, row = host
    cluster = row.clusters.get()
    archive, operation = services.enable(cluster, 10)
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    run_on(fleet_host, f"chmod 500 {archive.directory}")  # cp: Permission denied
    try:
        psql(fleet_host, "INSERT INTO pozol_wal_rows (id) SELECT generate_series(1, 100)")
        stuck = psql(fleet_host, "SELECT pg_walfile_name(pg_switch_wal())")
        wait_for(lambda: failed_count(fleet_host) > 0, 60, "the archive command to fail")
        assert stuck not in archived(fleet_host, archive.directory)
        # PostgreSQL keeps the segment, marked ready to archive, and retries it.
        wal_dir = f"{fleet_host.pg_data_dir}/pg_wal"
        kept = run_on(fleet_host, f"ls {wal_dir} {wal_dir}/archive_status")
        assert stuck in kept and f"{stuck}.ready" in kept

        checked = drive(services.check(archive))
        assert checked.status == Operation.Status.SUCCEEDED, checked.error
        archive.refresh_from_db()
        assert archive.state == WalArchive.State.ON
        assert archive.failed_count > 0 and archive.last_failed_wal == stuck
        alert = Alert.objects.get(host=row, kind=alerting.KIND, resolved_at=None)
        assert f"{stuck} could not be archived" in alert.message
        assert "Permission denied" in archive.failure_reason
        assert "permission denied" in alert.message
        print(f"\nalert while failing: {alert.message}")
    finally:
        run_on(fleet_host, f"chmod 700 {archive.directory}")

    # Writable again: PostgreSQL's retry archives the very segment; no gap, resolved. A
    # new segment wakes the archiver, which after three failures waits a minute else.
    last = new_segment(fleet_host, 1)
    wait_for(lambda: {stuck, last} <= set(archived(fleet_host, archive.directory)), 120,
             "the retried segment to be archived")
    drive(services.check(archive))
    archive.refresh_from_db()
    assert not archive.gaps and archive.last_archived_wal >= stuck
    assert not Alert.objects.filter(host=row, kind=alerting.KIND, resolved_at=None).exists()


def archiving(fleet_host, cluster, archive_timeout: int) -> WalArchive:
    """Archiving enabled on the cluster, its first segment archived."""
    archive, operation = services.enable(cluster, archive_timeout)
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    first = new_segment(fleet_host, 1)
    wait_for(lambda: first in archived(fleet_host, archive.directory), 60,
             "the first segment to be archived")
    return archive


def note_on(fleet_host) -> str:
    """The archive command's failure note in the data directory: `<owner> <mode>` and
    its text, or "" when there is none."""
    note = f"{fleet_host.pg_data_dir}/pozol_archive_failure"
    return run_on(fleet_host, f"[ ! -f {note} ] || {{ stat -c '%U %a' {note}; cat {note}; }}")


def test_a_read_only_archive_is_alerted_with_the_reason_the_command_gave(
        host, api, signed_in):  # noqa: F811
    """The archive dataset made read-only (`zfs set readonly=on`): its `available` is
    plenty, so only the archive command's own note can say why it fails. The periodic
    read (the wal tick, no Operation) keeps that reason; the alert, the API and the
    host's WAL tab name it; once writable again the retried segment is archived, the
    note is gone, the reason cleared and the alert resolved."""
    import os

    from django.utils import timezone

    from apps.remote import ssh as product_ssh
    from apps.wal.core import commands

    fleet_host, row = host
    cluster = row.clusters.get()
    archive = archiving(fleet_host, cluster, 10)
    run_on(fleet_host, f"zfs set readonly=on {archive.dataset}")
    try:
        stuck = new_segment(fleet_host, 10)
        wait_for(lambda: failed_count(fleet_host) > 0, 60, "the archive command to fail")
        assert stuck not in archived(fleet_host, archive.directory)
        owner_mode, _, text = note_on(fleet_host).partition("\n")
        assert owner_mode == f"{fleet_host.pg_os_user} 600", owner_mode
        assert text.startswith(f"{stuck}\n") and "Read-only file system" in text, text

        # What the read sees, as the parser gets it (POZOL_WAL_CAPTURE: keep it).
        out = product_ssh.session(row.ssh_target())(
            commands.status(cluster.target(), archive.dataset)).stdout
        if os.environ.get("POZOL_WAL_CAPTURE"):
            with open(os.environ["POZOL_WAL_CAPTURE"], "w") as kept_file:
                kept_file.write(out)
        print(f"\nthe read, failing: {out[:1200]}")

        assert services.tick(timezone.now()) == []  # recorded by the read, no Operation
        archive.refresh_from_db()
        assert archive.last_failed_wal == stuck
        assert archive.space_available > archive.segment_size  # not full: the note says
        assert "Read-only file system" in archive.failure_reason
        assert archive.failure_reason_wal == stuck and archive.failure_reason_at
        alert = Alert.objects.get(host=row, kind=alerting.KIND, resolved_at=None)
        print(f"alert while read-only: {alert.message}")
        assert f"{stuck} could not be archived" in alert.message
        assert "the archive dataset is read-only" in alert.message
        assert "Read-only file system" in alert.message and "no space" not in alert.message
        shown = api.get(f"/api/wal-archives/{archive.pk}/").json()
        assert "Read-only file system" in shown["failure_reason"]
        assert shown["failure_reason_wal"] == stuck
        page = signed_in.get(f"/hosts/{row.pk}/wal/").content.decode()
        shown_cause = page.split('class="error wal-failure">', 1)[1].split("</span>", 1)[0]
        assert shown_cause.startswith("the archive dataset is read-only")
        # cp's quote marks around the path, as the host wrote them, escaped on the page.
        assert "Read-only file system" in shown_cause and "&#x27;" in shown_cause
    finally:
        run_on(fleet_host, f"zfs set readonly=off {archive.dataset}")

    last = new_segment(fleet_host, 1)
    wait_for(lambda: {stuck, last} <= set(archived(fleet_host, archive.directory)), 120,
             "the retried segment to be archived")
    assert note_on(fleet_host) == ""  # the success removed it
    assert services.tick(timezone.now() + timezone.timedelta(minutes=5)) == []
    archive.refresh_from_db()
    assert archive.failure_reason == "" and archive.failure_reason_at is None
    assert not archive.gaps and archive.last_archived_wal >= last
    assert not Alert.objects.filter(host=row, kind=alerting.KIND, resolved_at=None).exists()
    assert api.get(f"/api/wal-archives/{archive.pk}/").json()["failure_reason"] == ""


def test_a_segment_archived_with_other_content_is_refused_and_named(host):  # noqa: F811
    """A file under the name of the segment being written is in the archive already
    (another cluster's, a restore gone wrong): the command refuses to overwrite it and
    fails; the alert says so; once an operator removed it, the segment is archived."""
    from django.utils import timezone

    from tests.integration.test_wal import TABLE

    fleet_host, row = host
    cluster = row.clusters.get()
    # No archive_timeout switch between naming the segment being written and its switch.
    archive = archiving(fleet_host, cluster, 3600)
    # Written into first: right after a switch the position is on the segment boundary,
    # which pg_walfile_name names as the segment before.
    psql(fleet_host, f"INSERT INTO {TABLE} (id) VALUES (0)")
    taken = psql(fleet_host, "SELECT pg_walfile_name(pg_current_wal_lsn())")
    squatter = f"{archive.directory}/{taken}"
    run_on(fleet_host, f"echo not-this-cluster > {squatter} && chown "
                       f"{fleet_host.pg_os_user}: {squatter}")
    try:
        assert new_segment(fleet_host, 10) == taken
        wait_for(lambda: failed_count(fleet_host) > 0, 60, "the archive command to fail")
        assert run_on(fleet_host, f"cat {squatter}").strip() == "not-this-cluster"
        assert services.tick(timezone.now()) == []
        archive.refresh_from_db()
        assert archive.failure_reason == (f"{squatter} is archived already with different "
                                          "content: not overwritten")
        alert = Alert.objects.get(host=row, kind=alerting.KIND, resolved_at=None)
        print(f"\nalert while refused: {alert.message}")
        assert (f"{taken} could not be archived" in alert.message
                and "archived already with different content" in alert.message)
    finally:
        run_on(fleet_host, f"rm -f {squatter}")

    last = new_segment(fleet_host, 1)
    wait_for(lambda: {taken, last} <= set(archived(fleet_host, archive.directory)), 120,
             "the refused segment to be archived")
    assert services.tick(timezone.now() + timezone.timedelta(minutes=5)) == []
    archive.refresh_from_db()
    assert archive.failure_reason == "" and not archive.gaps
    assert not Alert.objects.filter(host=row, kind=alerting.KIND, resolved_at=None).exists()


def test_an_unmounted_archive_is_not_written_into(host):  # noqa: F811
    """Unmounted, the archive's path is a directory of its parent dataset: the command
    refuses it (it is not a mount point) rather than archive where no clone reads, and
    notes why; the read says the archive is not mounted; mounted again, it archives."""
    from django.utils import timezone

    fleet_host, row = host
    cluster = row.clusters.get()
    archive = archiving(fleet_host, cluster, 10)
    run_on(fleet_host, f"zfs unmount {archive.dataset}")
    try:
        # What a careless repair could leave: the bare path writable by the owner.
        run_on(fleet_host, f"mkdir -p {archive.directory} && chown "
                           f"{fleet_host.pg_os_user}: {archive.directory}")
        stuck = new_segment(fleet_host, 10)
        wait_for(lambda: failed_count(fleet_host) > 0, 60, "the archive command to fail")
        assert archived(fleet_host, archive.directory) == []  # nothing in the parent's
        _, _, text = note_on(fleet_host).partition("\n")
        assert text == (f"{stuck}\n{archive.directory} is not a mount point: the archive "
                        "dataset is not mounted"), text
        assert services.tick(timezone.now()) == []
        alert = Alert.objects.get(host=row, kind=alerting.KIND, resolved_at=None)
        print(f"\nalert while unmounted: {alert.message}")
        assert f"the archive {archive.dataset} is not mounted" in alert.message
    finally:
        run_on(fleet_host, f"zfs mount {archive.dataset}")

    last = new_segment(fleet_host, 1)
    wait_for(lambda: {stuck, last} <= set(archived(fleet_host, archive.directory)), 120,
             "the refused segment to be archived")
    assert note_on(fleet_host) == ""
    assert services.tick(timezone.now() + timezone.timedelta(minutes=5)) == []
    assert not Alert.objects.filter(host=row, kind=alerting.KIND, resolved_at=None).exists()


FILL = "pozol_wal_fill"


def random_mib(count: int) -> str:
    """`count` rows of a mebibyte of random bytes each (incompressible, as the archive
    compresses): WAL that fills the archive as fast as it is written."""
    # The inner query names the outer row, so it runs once per row, not once in all.
    return (f"INSERT INTO {FILL} SELECT (SELECT decode(string_agg(md5(random()::text || g), "
            f"''), 'hex') FROM generate_series(1, 65536) g WHERE r > 0) "
            f"FROM generate_series(1, {count}) r")


def zfs_number(fleet_host, prop: str, dataset: str) -> int:
    return int(run_on(fleet_host, f"zfs get -Hp -o value {prop} {dataset}").strip())


def test_a_full_archive_is_alerted_with_its_cause_and_loses_no_wal(host):  # noqa: F811
    """An operator's quota (or a full pool) leaves the archive less room than a segment
    while the cluster writes: the archive command fails without leaving a partial
    segment under a segment's name, PostgreSQL keeps the segments, the alert says there
    is no space, the window stays at what was archived; once the quota is lifted the
    segments are archived, no gap, and the alert resolves."""
    import os
    import time

    from apps.remote import ssh as product_ssh
    from apps.snapshots import services as snapshot_services
    from apps.wal.core import commands

    fleet_host, row = host
    cluster = row.clusters.get()
    archive, operation = services.enable(cluster, 10)
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    psql(fleet_host, f"CREATE TABLE IF NOT EXISTS {FILL} (b bytea)")
    taken = drive(snapshot_services.snapshot_now(row, cluster=cluster))  # the window's base
    assert taken.status == Operation.Status.SUCCEEDED, taken.error
    time.sleep(1.1)  # a window starts a second after its snapshot (creation's resolution)
    try:
        first = new_segment(fleet_host, 10)
        wait_for(lambda: first in archived(fleet_host, archive.directory), 60,
                 "the first segment to be archived")
        drive(services.check(archive))
        archive.refresh_from_db()
        before = archive.window[-1][1]
        # Room for a few mebibytes more, then twenty of random WAL: a segment cannot fit.
        used = zfs_number(fleet_host, "used", archive.dataset)
        run_on(fleet_host, f"zfs set quota={used + 2 * 2**20} {archive.dataset}")
        filled_at = time.time()
        psql(fleet_host, random_mib(20))
        psql(fleet_host, "SELECT pg_switch_wal()")
        wait_for(lambda: failed_count(fleet_host) > 0, 90, "the archive command to fail")
        stuck = psql(fleet_host, "SELECT last_failed_wal FROM pg_stat_archiver")
        # Nothing partial under a segment's name: every segment file is whole.
        sizes = run_on(fleet_host, f"cd {archive.directory} && stat -c '%n %s' *")
        print(f"\nthe full archive holds: {sizes.strip()}")
        for name, size in (line.split() for line in sizes.splitlines()):
            assert len(name) != 24 or int(size) == 16 * 2**20, (name, size)
        assert stuck not in archived(fleet_host, archive.directory)
        wal_dir = f"{fleet_host.pg_data_dir}/pg_wal"
        kept = run_on(fleet_host, f"ls {wal_dir} {wal_dir}/archive_status")
        assert stuck in kept and f"{stuck}.ready" in kept

        # What the read sees, as the parser gets it (POZOL_WAL_CAPTURE: keep it).
        run = product_ssh.session(row.ssh_target())
        out = run(commands.status(cluster.target(), archive.dataset)).stdout
        if os.environ.get("POZOL_WAL_CAPTURE"):
            with open(os.environ["POZOL_WAL_CAPTURE"], "w") as kept_file:
                kept_file.write(out)
        status = commands.parse_status(out)
        assert status.available is not None and status.available < 16 * 2**20

        checked = drive(services.check(archive))
        assert checked.status == Operation.Status.SUCCEEDED, checked.error
        archive.refresh_from_db()
        assert archive.failed_count > 0 and archive.last_failed_wal == stuck
        assert archive.space_available < archive.segment_size
        # The window ends at what was archived, before the writes that did not fit.
        assert archive.window and archive.window[-1][1] < filled_at
        assert archive.window[-1][1] >= before
        alert = Alert.objects.get(host=row, kind=alerting.KIND, resolved_at=None)
        assert f"{stuck} could not be archived" in alert.message
        assert "no space" in alert.message and "quota" in alert.message
        assert "Disk quota exceeded" in archive.failure_reason
        print(f"alert while full: {alert.message}")
    finally:
        run_on(fleet_host, f"zfs set quota=none {archive.dataset}")

    # Room again: a new segment wakes the archiver, which archives the stuck one first.
    last = new_segment(fleet_host, 1)
    wait_for(lambda: last in archived(fleet_host, archive.directory), 120,
             "the held segments to be archived")
    assert stuck in archived(fleet_host, archive.directory)
    checked = drive(services.check(archive))
    assert checked.status == Operation.Status.SUCCEEDED, checked.error
    archive.refresh_from_db()
    assert not archive.gaps and archive.last_archived_wal >= last
    assert archive.window[-1][1] > filled_at
    assert not Alert.objects.filter(host=row, kind=alerting.KIND, resolved_at=None).exists()
    psql(fleet_host, f"DROP TABLE {FILL}")


def test_a_worker_killed_during_a_point_in_time_replay_leaves_nothing_behind(
        host, settings, tmp_path, api, signed_in):  # noqa: F811
    """The worker making a clone to a moment is SIGKILLed while the clone's startup
    process replays archived WAL; the API answers meanwhile; the sweeper re-delivers
    the step to a new worker, which ends the clone ready at the moment (or failed with
    its reason), one postmaster, and neither the archive's clone nor its
    `@pozol-pitr-` snapshot left once it is done."""
    import time
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import wait as wait_futures
    from datetime import UTC, datetime

    from apps.clones import services as clones
    from apps.clones.models import Clone
    from apps.ops import engine
    from apps.remote import ssh as product_ssh
    from apps.remote.commands import cmd
    from apps.snapshots import services as snapshot_services
    from tests.integration.test_clones import connect
    from tests.integration.test_drills import leftovers
    from tests.integration.test_wal import TABLE
    from tests.workers import Worker

    lease = "3"
    settings.POZOL = {**settings.POZOL, "OPERATION_LEASE": int(lease)}
    fleet_host, row = host
    cluster = row.clusters.get()
    archive, operation = services.enable(cluster, 10)
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    taken = drive(snapshot_services.snapshot_now(row, cluster=cluster))
    assert taken.status == Operation.Status.SUCCEEDED, taken.error
    psql(fleet_host, f"CREATE TABLE IF NOT EXISTS {FILL} (b bytea)")
    try:
        psql(fleet_host, random_mib(32))  # WAL for the replay to take a moment over
    finally:
        psql(fleet_host, f"DROP TABLE {FILL}")
    psql(fleet_host, f"INSERT INTO {TABLE} (id) VALUES (1)")
    time.sleep(0.5)
    moment = datetime.fromtimestamp(float(psql(
        fleet_host, "SELECT extract(epoch from clock_timestamp())")), UTC)
    time.sleep(0.5)
    last = new_segment(fleet_host, 1)  # row 2, after the moment
    wait_for(lambda: last in archived(fleet_host, archive.directory), 120, "the segments")
    assert drive(services.check(archive)).status == Operation.Status.SUCCEEDED

    watch = product_ssh.session(row.ssh_target())
    doomed = Worker("tests.worker_app", "doomed", tmp_path, POZOL_OPERATION_LEASE=lease)
    try:
        # One watcher on the host, looking every few milliseconds from before the clone
        # is asked for: a replay on a loaded machine can be over between two SSH round
        # trips, so none may fall between the watcher's looks.
        with ThreadPoolExecutor(max_workers=1) as pool:
            watcher = pool.submit(watch, cmd("timeout", "150", "sh", "-c", WATCH_REPLAY),
                                  timeout=160, check=False)
            clone, operation, password = clones.create_clone(row, cluster, name="replaykill",
                                                             at=moment)

            deadline = time.monotonic() + 150
            while not wait_futures([watcher], timeout=1).done:
                # As beat does: a delivery lost on a loaded machine comes again.
                engine.sweep()
                ended = Operation.objects.get(pk=operation.pk)
                assert ended.is_active, f"the clone ended before a replay: {ended.error}"
                assert time.monotonic() < deadline, "timed out waiting for the replay"
            doomed.kill()
            assert watcher.result().ok, "the clone's startup process never replayed"
    finally:
        doomed.stop()
    print(f"\nkilled while replaying; on the host: {leftovers(fleet_host, 'replaykill')!r}")
    assert Operation.objects.get(pk=operation.pk).status == Operation.Status.RUNNING
    for path in (f"/api/clones/{clone.pk}/", "/api/clones/", "/api/wal-archives/",
                 f"/api/operations/{operation.pk}/"):
        assert api.get(path).status_code == 200, path
    for page in (f"/clones/{clone.pk}/", "/clones/", f"/hosts/{row.pk}/"):
        assert signed_in.get(page).status_code == 200, page

    rescuer = Worker("tests.worker_app", "rescuer", tmp_path, POZOL_OPERATION_LEASE=lease)
    try:
        time.sleep(int(lease) + 0.5)  # the lease must run out before a sweep takes it
        assert operation.pk in wait_for(engine.sweep, 30, "the sweeper to find the step")
        done = wait_for(lambda: (op := Operation.objects.get(pk=operation.pk)).is_active
                        is False and op, 180, "the rescuing worker to finish")
    finally:
        rescuer.stop()
    clone.refresh_from_db()
    print(f"after the rescue: {done.status} in {done.attempts} attempts, clone {clone.state}"
          f" {clone.error[-300:]!r}, reached {clone.reached_at}")
    assert done.attempts == 2
    assert done.log_lines.filter(text__contains="expired; re-running step").exists()
    datasets = run_on(fleet_host, "zfs list -H -t all -o name")
    assert "pozol_clones/replaykill/wal_archive" not in datasets
    assert "@pozol-pitr-replaykill" not in datasets
    if done.status == Operation.Status.SUCCEEDED:
        assert clone.state == Clone.State.READY
        assert leftovers(fleet_host, "replaykill").count("bin/postgres") == 1
        assert connect(clone, password, f"SELECT string_agg(id::text, ',' ORDER BY id) FROM "
                                        f"{TABLE} WHERE id IN (1, 2)") == "1"
        assert clone.reached_at is not None and clone.reached_at <= moment
        assert drive(clones.destroy_clone(clone)).status == Operation.Status.SUCCEEDED
    else:
        assert clone.state == Clone.State.FAILED and clone.error, rescuer.output()[-3000:]
    assert leftovers(fleet_host, "replaykill") == ""
    assert api.get(f"/api/clones/{clone.pk}/").status_code == 200


BUSY_REPLAY = "tank/pozol_wal_busy_replay"


def test_replay_snapshots_left_behind_go_unless_a_clone_still_reads_them(
        host, monkeypatch):  # noqa: F811
    """A point-in-time clone's `@pozol-pitr-<clone>` snapshot outlives its replay when the
    clone's worker died and the orphan reconciler removed the clone: once older than
    STALE_REPLAY the check destroys it. One an archive clone still reads (a replay whose
    clean-up found the mount busy) is kept, and does not start a check every tick."""
    import time

    from django.utils import timezone

    from apps.remote import ssh as product_ssh
    from apps.snapshots import inventory
    from apps.wal import inspection

    fleet_host, row = host
    cluster = row.clusters.get()
    archive, operation = services.enable(cluster, 10)
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    gone, busy = f"{archive.dataset}@pozol-pitr-gone", f"{archive.dataset}@pozol-pitr-busy"
    run_on(fleet_host, f"zfs snapshot {gone} && zfs snapshot {busy}")
    inventory.refresh(row, product_ssh.session(row.ssh_target()))
    # Cloned after the listing: the inventory does not know yet that a clone reads it.
    run_on(fleet_host, f"zfs clone {busy} {BUSY_REPLAY}")
    try:
        time.sleep(1.1)
        monkeypatch.setattr(inspection, "STALE_REPLAY", timezone.timedelta(0))
        checked = drive(services.check(archive))
        assert checked.status == Operation.Status.SUCCEEDED, checked.error
        snapshots = run_on(fleet_host, f"zfs list -H -t snapshot -o name -r {archive.dataset}")
        assert gone not in snapshots and busy in snapshots
        logged = " ".join(line.text for line in checked.log_lines.all())
        print(f"\nthe check: {logged[-600:]}")
        assert f"destroyed {gone}" in logged and f"kept {busy}" in logged
        # The one a clone reads is no reason for another check, tick after tick.
        assert services.tick(timezone.now() + timezone.timedelta(hours=1)) == []
    finally:  # zfs-fuse holds a new mount busy for a moment
        run_on(fleet_host, f"i=0; until zfs destroy {BUSY_REPLAY}; do i=$((i+1)); "
                           "[ $i -ge 40 ] && exit 1; sleep 0.25; done")
