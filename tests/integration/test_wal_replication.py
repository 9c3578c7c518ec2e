"""A replication link carries the cluster's WAL archive, and the target replays to a
moment (issue 23), on two real test hosts: host1 archives, its link sends the cluster
and the archive to host2, and on host2 a restore drill to a moment between two rows
shows exactly the rows committed before it, after the table was dropped on host1; and
standing clones on host2 to an LSN, a restore point and a time do too.
Checked with plain zfs and psql over OpenSSH where the product's record could lie."""

from __future__ import annotations

import subprocess
import time
from datetime import UTC, datetime, timedelta

import pytest

from apps.clones import services
from apps.clones.models import Clone
from apps.drills.models import DrillRun, DrillSchedule
from apps.ops.models import Operation
from apps.replication.models import ReplicationLink
from apps.wal import services as wal
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_drills import leftovers
from tests.integration.test_replication import (
    TARGET_PARENT,
    make_link,
    run_link,
    snapshot,
    snapshots_of,
)
from tests.integration.test_snapshots import destroy, discovered, psql, run_anyway
from tests.integration.test_wal import archived, restart_as_owner
from tests.waiting import wait_for

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

TABLE = "pozol_carried"
ARCHIVE = "tank/pozol_wal/pg:data"
COPY = f"{TARGET_PARENT}/pozol_wal/pg:data"
# Run in every database of the drill's clone: the rows where the table is, "absent"
# elsewhere (a query naming a missing table would fail at parse time).
ROWS = ("SELECT CASE WHEN to_regclass('public.pozol_carried') IS NULL THEN 'absent' ELSE "
        "coalesce((xpath('/row/ids/text()', query_to_xml('SELECT string_agg(id::text, "
        "'','' ORDER BY id) AS ids FROM public.pozol_carried', false, true, '')))[1]::text, "
        "'none') END")


@pytest.fixture
def pair(fleet_hosts):
    source, target = fleet_hosts[0], fleet_hosts[1]
    yield source, target, (discovered(source), discovered(target))
    DrillSchedule.objects.all().delete()
    for name in ("archive_mode", "archive_command", "archive_timeout"):
        psql(source, f"ALTER SYSTEM RESET {name}")
    restart_as_owner(source)
    psql(source, f"DROP TABLE IF EXISTS {TABLE}")
    run_on(target, (
        f"i=0; while zfs list {TARGET_PARENT} >/dev/null 2>&1; do "
        f"zfs destroy -r -f {TARGET_PARENT} && break; i=$((i+1)); [ $i -ge 40 ] && exit 1; "
        "sleep 0.25; done"))
    names = run_anyway(source, "zfs list -H -t snapshot -o name -r tank").split()
    for name in names:  # a failed run may have left its holds
        run_anyway(source, f"zfs release pozol-link-to-host2 {name}")
    run_on(source, "i=0; while zfs list tank/pozol_wal > /dev/null 2>&1; do "
                   "zfs destroy -r tank/pozol_wal && break; i=$((i+1)); "
                   "[ $i -ge 40 ] && exit 1; sleep 0.25; done")
    destroy(source, *(n for n in names if "@pozol_" in n and n.startswith("tank/pg")))


def now_on(fleet_host) -> datetime:
    return datetime.fromtimestamp(float(psql(
        fleet_host, "SELECT extract(epoch from clock_timestamp())")), UTC)


def test_the_link_carries_the_archive_and_the_target_replays_to_a_moment(pair, api):
    source, target, (host1, host2) = pair
    cluster = host1.clusters.get()
    archive, operation = wal.enable(cluster, 10)
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    psql(source, f"CREATE TABLE {TABLE} (id int, at timestamptz DEFAULT clock_timestamp())")
    base = snapshot(host1, cluster)
    time.sleep(1.1)  # a moment within the snapshot's second is not replayed to
    psql(source, f"INSERT INTO {TABLE} (id) VALUES (1)")
    moment = now_on(source)
    time.sleep(1.1)
    psql(source, f"INSERT INTO {TABLE} (id) VALUES (2)")
    psql(source, f"DROP TABLE {TABLE}")
    last = psql(source, "SELECT pg_walfile_name(pg_switch_wal())")
    wait_for(lambda: last in archived(source, archive.directory), 90, "the segment")

    link = make_link((host1, host2))
    operation = run_link(link)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    log = " ".join(operation.log_lines.values_list("text", flat=True))
    assert f"carrying the WAL archive {ARCHIVE}" in log
    link.refresh_from_db()
    assert link.archive == ARCHIVE and link.archive_snapshot.startswith("pozol-carry-to-host2-")
    # The copy is on host2 with the snapshot sent, holding the segment archived last.
    assert snapshots_of(target, COPY) == [link.archive_snapshot]
    assert snapshots_of(source, ARCHIVE) == [link.archive_snapshot]
    since, until = link.archive_window[-1]
    assert since <= moment.timestamp() <= until, (link.archive_window, moment)
    print(f"\nwindow on the target: {link.archive_window}")
    shown = api.get(f"/api/replication-links/{link.pk}/").json()
    assert shown["archive"] == ARCHIVE and shown["archive_window"] == link.archive_window

    # Another run sends the archive again (incrementally): one carried snapshot is kept
    # on each side, the newest.
    first = link.archive_snapshot
    time.sleep(1.1)
    again = run_link(link)
    assert again.status == Operation.Status.SUCCEEDED, again.error
    link.refresh_from_db()
    assert link.archive_snapshot != first
    assert snapshots_of(target, COPY) == snapshots_of(source, ARCHIVE) == [
        link.archive_snapshot]
    assert link.state == ReplicationLink.State.IN_SYNC

    # On host2: a drill to the moment between the two rows sees row 1 only.
    created = api.post("/api/drill-schedules/", {"link": link.pk, "check_query": ROWS},
                       format="json")
    assert created.status_code == 201, created.content
    schedule = DrillSchedule.objects.get(pk=created.json()["id"])
    outside = api.post(f"/api/drill-schedules/{schedule.pk}/run/",
                       {"at": (moment - timedelta(days=1)).isoformat()}, format="json")
    assert outside.status_code == 400, outside.content
    assert "on the replication target" in outside.json()["error"]["message"]
    answered = api.post(f"/api/drill-schedules/{schedule.pk}/run/",
                        {"at": moment.isoformat()}, format="json")
    assert answered.status_code == 202, answered.content
    run = DrillRun.objects.get(pk=answered.json()["id"])
    assert drive(run.operation).status == Operation.Status.SUCCEEDED, run.operation.error
    run.refresh_from_db()
    assert run.status == DrillRun.Status.PASSED, (run.error, run.log_tail)
    assert run.host_id == host2.pk and run.snapshot == base
    assert run.answers["postgres"] == "1" and run.answers["template1"] == "absent"
    assert run.reached_at is not None and run.reached_at <= moment
    print(f"drill on host2 to {moment.isoformat()}: reached {run.reached_at.isoformat()}, "
          f"{run.total_seconds:.1f} s")
    assert leftovers(target, run.clone_name) == ""
    # The received snapshot the replay cloned is still there: the link goes on.
    assert snapshots_of(target, COPY) == [link.archive_snapshot]


    # A copy of the archive changed on the target refuses the link, saying so, and the
    # run leaves no archive snapshot of its own behind on the source.
    run_on(target, f"zfs snapshot {COPY}@by-hand")
    time.sleep(1.1)
    refused = run_link(link)
    assert refused.status == Operation.Status.FAILED and refused.error_code == "refused"
    assert "diverged" in refused.error and COPY in refused.error
    assert snapshots_of(source, ARCHIVE) == [link.archive_snapshot]


def rows_of(answer: dict) -> str:
    """The ids of the clone's table, through the clone's own role and password."""
    clone = answer["clone"]
    url = clone["connection_string"].replace(f"{clone['role']}@",
                                             f"{clone['role']}:{answer['password']}@")
    done = subprocess.run(["psql", url, "-XAtc", f"SELECT coalesce(string_agg(id::text, ',' "
                                                 f"ORDER BY id), 'none') FROM {TABLE}"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_standing_clones_on_the_target_reach_an_lsn_a_restore_point_and_a_time(pair, api):
    """On host2, from what one link run carried: a clone to an LSN, one to a restore
    point and one to a time each show the rows committed before their moment; the one
    to a time stays up, answering, across the link's next run."""
    source, target, (host1, host2) = pair
    cluster = host1.clusters.get()
    archive, operation = wal.enable(cluster, 10)
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    psql(source, f"CREATE TABLE {TABLE} (id int, at timestamptz DEFAULT clock_timestamp())")
    snapshot(host1, cluster)
    time.sleep(1.1)
    psql(source, f"INSERT INTO {TABLE} (id) VALUES (1)")
    lsn = psql(source, "SELECT pg_current_wal_insert_lsn()")
    psql(source, f"INSERT INTO {TABLE} (id) VALUES (2)")
    point = drive(wal.create_restore_point(archive, "after-two"))
    assert point.status == Operation.Status.SUCCEEDED, point.error
    psql(source, f"INSERT INTO {TABLE} (id) VALUES (3)")
    time.sleep(1.1)
    moment = now_on(source)
    time.sleep(1.1)
    psql(source, f"INSERT INTO {TABLE} (id) VALUES (4)")
    last = psql(source, "SELECT pg_walfile_name(pg_switch_wal())")
    wait_for(lambda: last in archived(source, archive.directory), 90, "the segment")
    link = make_link((host1, host2))
    carried = run_link(link)
    assert carried.status == Operation.Status.SUCCEEDED, carried.error
    link.refresh_from_db()
    # Made after the run: the copy on host2 does not hold it.
    late = drive(wal.create_restore_point(archive, "too-late"))
    assert late.status == Operation.Status.SUCCEEDED, late.error

    def ask(name: str, **moment_asked):
        return api.post("/api/clones/", {"cluster": cluster.pk, "link": link.pk, "name": name,
                                         "ttl_minutes": 60, **moment_asked}, format="json")

    refused = ask("late", restore_point="too-late")
    assert refused.status_code == 409, refused.content
    error = refused.json()["error"]
    assert error["code"] == "not_carried" and "recoverable window is any moment" in \
        error["message"]
    beyond = ask("beyond", lsn="FF/0")
    assert beyond.status_code == 400 and "on the replication target" in \
        beyond.json()["error"]["message"], beyond.content

    made = {}
    try:
        for name, asked, expected in (("to-lsn", {"lsn": lsn}, "1"),
                                      ("to-point", {"restore_point": "after-two"}, "1,2"),
                                      ("to-time", {"at": moment.isoformat()}, "1,2,3")):
            answer = ask(name, **asked)
            assert answer.status_code == 202, answer.content
            made[name] = answer = answer.json()
            done = drive(Operation.objects.get(pk=answer["operation"]["id"]))
            assert done.status == Operation.Status.SUCCEEDED, done.error
            answer["clone"] = api.get(f"/api/clones/{answer['clone']['id']}/").json()
            assert answer["clone"]["host"] == host2.pk and answer["clone"]["link"] == link.pk
            assert answer["clone"]["state"] == "ready", answer["clone"]
            assert rows_of(answer) == expected, name
            print(f"\n{name} on host2 ({asked}): rows {expected}, reached "
                  f"{answer['clone']['reached_at']}")
        # The carried archive's snapshot is not written on the target: only the link's.
        assert snapshots_of(target, COPY) == [link.archive_snapshot]

        for name in ("to-lsn", "to-point"):
            gone = api.delete(f"/api/clones/{made[name]['clone']['id']}/")
            assert gone.status_code == 202, gone.content
            assert drive(Operation.objects.get(pk=gone.json()["id"])).status == \
                Operation.Status.SUCCEEDED
            assert leftovers(target, name) == ""

        # The link's next run receives into the dataset whose snapshot the standing
        # clone holds, and replaces the archive's snapshot it replayed from.
        psql(source, f"INSERT INTO {TABLE} (id) VALUES (5)")
        time.sleep(1.1)
        newer = snapshot(host1, cluster)
        psql(source, f"INSERT INTO {TABLE} (id) VALUES (6)")
        last = psql(source, "SELECT pg_walfile_name(pg_switch_wal())")
        wait_for(lambda: last in archived(source, archive.directory), 90, "the segment")
        again = run_link(link)
        assert again.status == Operation.Status.SUCCEEDED, again.error
        link.refresh_from_db()
        assert link.common_snapshot == newer
        assert snapshots_of(target, COPY) == [link.archive_snapshot]
        standing = api.get(f"/api/clones/{made['to-time']['clone']['id']}/").json()
        assert standing["state"] == "ready"
        assert rows_of(made["to-time"]) == "1,2,3"
        # Reset: the same clone (name, port, password) to the newest moment the copies
        # reach now, the received snapshot before it replayed with the carried archive.
        reset = api.post(f"/api/clones/{standing['id']}/reset/", {}, format="json")
        assert reset.status_code == 202, reset.content
        done = drive(Operation.objects.get(pk=reset.json()["id"]))
        assert done.status == Operation.Status.SUCCEEDED, done.error
        standing = api.get(f"/api/clones/{standing['id']}/").json()
        assert standing["state"] == "ready" and standing["port"] == made["to-time"][
            "clone"]["port"]
        assert rows_of(made["to-time"]) == "1,2,3,4,5,6"
        assert standing["reached_at"] and standing["target_time"] > made["to-time"][
            "clone"]["target_time"]
    finally:
        for answer in made.values():
            clone = Clone.objects.get(pk=answer["clone"]["id"])
            if clone.state != Clone.State.DESTROYED:
                drive(services.destroy_clone(clone))
    assert leftovers(target, "to-time") == ""
