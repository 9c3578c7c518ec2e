"""A replication link between two real test hosts: host1's cluster to host2.

What the issue asks, each checked with plain zfs/psql over OpenSSH, not with
the product's own listing: a full send and two incrementals leave host2 with
the snapshots host1 has; PostgreSQL starts on a clone of the newest received
snapshot with the rows written before it, and the link's restore drill passes
there; a diverged target is refused, and
with the opt-in rolled back and replicated again; a worker killed during a
transfer is survived and the link ends in sync. Everything made here is
destroyed afterwards: the hosts are shared by the whole session.
"""

from __future__ import annotations

import time

import pytest

from apps.drills import services as drill_services
from apps.drills.models import DrillRun
from apps.ops import engine
from apps.ops.models import Operation
from apps.replication import services
from apps.replication.models import ReplicationLink
from apps.snapshots import services as snapshot_services
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_snapshots import (
    destroy,
    discovered,
    psql,
    run_anyway,
    start_on_clones,
    stop_clones,
)
from tests.waiting import wait_for
from tests.workers import Worker

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

TABLE = "pozol_replicated"
TARGET_PARENT = "tank/backup"
TARGETS = ("tank/backup/pg/data", "tank/backup/pg/wal")
CLONE_PORT = 5492
LEASE = "3"


def snapshots_of(fleet_host, dataset: str) -> list[str]:
    out = run_anyway(fleet_host, f"zfs list -H -t snapshot -o name -r {dataset}")
    return sorted(line.partition("@")[2] for line in out.split()
                  if line.startswith(dataset + "@"))


def run_link(link: ReplicationLink) -> Operation:
    return drive(services.run_now(link), limit=600, pause=0.2)


def snapshot(host, cluster) -> str:
    operation = drive(snapshot_services.snapshot_now(host, cluster=cluster))
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    return operation.state["snapshot"]


def insert(fleet_host, rows: int) -> int:
    psql(fleet_host, f"CREATE TABLE IF NOT EXISTS {TABLE} (id serial PRIMARY KEY, v text)")
    psql(fleet_host, f"INSERT INTO {TABLE} (v) SELECT md5(g::text) FROM "
                     f"generate_series(1, {rows}) g")
    psql(fleet_host, "CHECKPOINT")
    return int(psql(fleet_host, f"SELECT count(*) FROM {TABLE}"))


@pytest.fixture
def pair(fleet_hosts):
    source, target = fleet_hosts[0], fleet_hosts[1]
    hosts = discovered(source), discovered(target)
    yield source, target, hosts
    run_on(target, (  # zfs-fuse may hold a mount busy for a moment after a receive
        f"i=0; while zfs list {TARGET_PARENT} >/dev/null 2>&1; do "
        f"zfs destroy -r -f {TARGET_PARENT} && break; i=$((i+1)); [ $i -ge 40 ] && exit 1; "
        "sleep 0.25; done"))
    psql(source, f"DROP TABLE IF EXISTS {TABLE}")
    names = run_anyway(source, "zfs list -H -t snapshot -o name -r tank/pg").split()
    for name in names:  # a failed run may have left its holds
        run_anyway(source, f"zfs release pozol-link-to-host2 {name}")
    destroy(source, *(n for n in names if "@pozol_" in n))


def make_link(hosts, **settings) -> ReplicationLink:
    source, target = hosts
    cluster = source.clusters.get()
    return services.create_link(name="to-host2", source_host=source, target_host=target,
                                target_parent=TARGET_PARENT, cluster_data_dir=cluster.data_dir,
                                interval_minutes=0, **settings)


def test_full_then_two_incrementals_and_postgres_starts_on_the_copy(pair, api):
    source, target, hosts = pair
    host1, host2 = hosts
    cluster = host1.clusters.get()
    link = make_link(hosts)

    insert(source, 1000)
    first = snapshot(host1, cluster)
    operation = run_link(link)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert operation.result["action"] == "full"
    for dataset, copy in zip(("tank/pg/data", "tank/pg/wal"), TARGETS, strict=True):
        assert snapshots_of(target, copy) == snapshots_of(source, dataset) == [first]
    # zfs-fuse takes none of -w/-c/-L, and the plan says so per dataset; its listing never
    # asks for `encryption` (which zfs-fuse would refuse), read as not encrypted.
    logged = [line.text for line in operation.log_lines.all()]
    said = [text for text in logged if text.startswith("tank/pg/data: zfs send ")]
    assert said and said[0].startswith("tank/pg/data: zfs send no -w/-c/-L (-w off: the "
                                       "source (zfs-fuse, pool version 23) has no native "
                                       "encryption; -c off: "), logged
    link.refresh_from_db()
    assert link.large_blocks_sent is False and link.source_encryption == {}

    names = [first]
    for rows in (500, 700):
        time.sleep(1.1)  # snapshot names have a one-second resolution
        insert(source, rows)
        names.append(snapshot(host1, cluster))
        operation = run_link(link)
        assert operation.status == Operation.Status.SUCCEEDED, operation.error
        assert operation.result["action"] == "incremental"
    committed = int(psql(source, f"SELECT count(*) FROM {TABLE}"))
    assert committed == 2200
    for dataset, copy in zip(("tank/pg/data", "tank/pg/wal"), TARGETS, strict=True):
        assert snapshots_of(target, copy) == snapshots_of(source, dataset) == sorted(names)
    link.refresh_from_db()
    assert link.state == ReplicationLink.State.IN_SYNC
    assert link.common_snapshot == names[-1] == link.newest_received
    assert services.lag_of(link).lag is not None
    # The receive-only key is in the target's authorized_keys, restricted.
    keys = run_on(target, f"cat {target.authorized_keys_path}")
    line = next(k for k in keys.splitlines() if k.endswith("pozol-link-to-host2"))
    assert line.startswith('restrict,command="')
    # No hold is left behind after a finished run.
    held = run_on(source, f"zfs get -H -o value userrefs tank/pg/data@{names[-1]}").strip()
    assert held == "0"
    # The newest common snapshot is refused to a destroy, even forced.
    from apps.common.errors import Conflict
    from apps.snapshots.models import Snapshot
    last = Snapshot.objects.get(host=host1, dataset="tank/pg/data", name=names[-1])
    with pytest.raises(Conflict, match="last common snapshot of link to-host2"):
        snapshot_services.destroy(last, force=True)

    assert rows_on_a_clone_of(target, names[-1]) == committed

    # A restore drill per link: the schedule's tick runs it on the target, from the newest
    # snapshot received, laid out as the source cluster.
    began = time.monotonic()
    created = api.post("/api/drill-schedules/", {"link": link.pk}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["host"] == host2.pk
    started = drill_services.tick()
    assert [run.schedule_id for run in started] == [created.json()["id"]]
    drill = started[0]
    assert drive(drill.operation).status == Operation.Status.SUCCEEDED, drill.operation.error
    drill.refresh_from_db()
    assert drill.status == DrillRun.Status.PASSED, (drill.error, drill.log_tail)
    assert drill.host_id == host2.pk and drill.snapshot == names[-1]
    assert drill.datasets == list(TARGETS)
    assert {"postgres", "template1"} <= set(drill.answers)
    print(f"\ndrill on the target passed: {drill.total_seconds:.2f} s on the host, "
          f"{time.monotonic() - began:.2f} s from the schedule's creation")
    # Its clone is gone, and with it its PostgreSQL (zfs refuses a busy mount; the
    # socket directory goes after the stop). Not `ps`: every host shares this machine's.
    assert "pozol_clones/pozol-drill" not in run_on(target, "zfs list -H -o name")
    socket_dir = drill.layout["socket_dir"]
    assert run_on(target, f"test -e {socket_dir} && echo left || echo gone").strip() == "gone"
    assert not host2.open_alerts.filter(kind="restore_drill_failed").exists()
    assert drill_services.tick() == []  # not due again for a day


def rows_on_a_clone_of(fleet_host, name: str) -> int:
    try:
        socket = start_on_clones(fleet_host, f"{TARGETS[0]}@{name}", f"{TARGETS[1]}@{name}",
                                 "tank/repl_clone", CLONE_PORT)
        return int(psql(fleet_host, f"SELECT count(*) FROM {TABLE}", port=CLONE_PORT,
                        socket=socket))
    finally:
        stop_clones(fleet_host, "tank/repl_clone")


def test_a_diverged_target_is_refused_until_the_operator_opts_in(pair, operator):
    source, target, hosts = pair
    host1, _ = hosts
    cluster = host1.clusters.get()
    link = make_link(hosts)
    insert(source, 100)
    snapshot(host1, cluster)
    assert run_link(link).status == Operation.Status.SUCCEEDED

    run_on(target, f"zfs snapshot {TARGETS[0]}@diverged_by_hand")
    time.sleep(1.1)
    newest = snapshot(host1, cluster)
    refused = run_link(link)
    assert refused.status == Operation.Status.FAILED
    assert refused.error_code == "refused"
    assert "diverged" in refused.error and "@diverged_by_hand" in refused.error
    link.refresh_from_db()
    assert link.state == ReplicationLink.State.REFUSED and "diverged" in link.last_error
    assert "diverged_by_hand" in snapshots_of(target, TARGETS[0])  # nothing destroyed

    link = services.opt_in_rollback(link, by=operator)
    operation = run_link(link)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    log = " ".join(operation.log_lines.values_list("text", flat=True))
    assert f"opted in by {operator.username}" in log
    assert "diverged_by_hand" not in snapshots_of(target, TARGETS[0])
    assert snapshots_of(target, TARGETS[0])[-1] == newest
    link.refresh_from_db()
    assert link.state == ReplicationLink.State.IN_SYNC


def test_a_worker_killed_during_a_transfer_is_survived(pair, settings, tmp_path):
    source, target, hosts = pair
    host1, _ = hosts
    settings.POZOL = {**settings.POZOL, "OPERATION_LEASE": int(LEASE)}
    cluster = host1.clusters.get()
    link = make_link(hosts)
    # Incompressible data, so the transfer lasts long enough to kill its worker.
    run_on(source, f"dd if=/dev/urandom of={source.pg_data_dir}/../ballast bs=1M count=160 "
                   "status=none")
    try:
        snapshot(host1, cluster)
        doomed = Worker("tests.worker_app", "doomed", tmp_path, POZOL_OPERATION_LEASE=LEASE)
        try:
            operation = services.run_now(link)
            units = wait_for(lambda: _sending(source, operation.pk), 120,
                               "the transfer to start on the host")
            doomed.kill()  # inside the step that waits for the transfer
        finally:
            doomed.stop()
        assert Operation.objects.get(pk=operation.pk).is_active
        assert not any(u.endswith(".status") for u in units), "killed after the transfer"

        rescuer = Worker("tests.worker_app", "rescuer", tmp_path, POZOL_OPERATION_LEASE=LEASE)
        try:
            time.sleep(int(LEASE) + 0.5)
            wait_for(lambda: operation.pk in engine.sweep(), 30, "the sweeper")
            done = wait_for(
                lambda: (op := Operation.objects.get(pk=operation.pk)).is_active is False
                and op, 180, "the rescuer to finish")
        finally:
            rescuer.stop()
        assert done.status == Operation.Status.SUCCEEDED, (done.error, rescuer.output()[-2000:])
        assert done.log_lines.filter(text__contains="expired; re-running step").exists()
        # The rescuer followed the same transfer: it was started once, never again.
        starts = done.log_lines.filter(text__contains="as detached unit")
        assert starts.count() == len({line.text for line in starts}), list(starts)
        for dataset, copy in zip(("tank/pg/data", "tank/pg/wal"), TARGETS, strict=True):
            assert snapshots_of(target, copy) == snapshots_of(source, dataset)
        link.refresh_from_db()
        assert link.state == ReplicationLink.State.IN_SYNC
    finally:
        run_anyway(source, f"rm -f {source.pg_data_dir}/../ballast")


def _sending(fleet_host, operation_id: int) -> list[str]:
    """The files of the operation's transfer units on the host, once one has started."""
    names = run_on(fleet_host, f"ls {fleet_host.work_dir}").split()
    units = [n for n in names if n.startswith(f"op{operation_id}-send")]
    return units if any(n.endswith(".pid") for n in units) else []



def test_a_nearly_full_target_is_refused_with_the_figures_before_anything_is_sent(pair):
    """Issue 19: a run into a nearly full target used to fail halfway and leave the pool
    full. Now the plan reads the target pool and the send's size first (zfs-fuse has no
    `zfs send -n`: the listing's estimate) and refuses, holding and sending nothing."""
    source, target, hosts = pair
    host1, _ = hosts
    link = make_link(hosts)
    base = target.pg_data_dir.rsplit("/pg/data/", 1)[0]
    run_on(source, f"dd if=/dev/urandom of={source.pg_data_dir}/../ballast bs=1M count=120 "
                   "status=none")
    # Leave the target pool less room than the transfer needs.
    free = int(run_on(target, "zfs get -Hp -o value available tank").strip())
    run_on(target, f"dd if=/dev/zero of={base}/filler bs=1M count={free // 2**20 - 40} "
                   "status=none || true")
    try:
        name = snapshot(host1, host1.clusters.get())
        refused = run_link(link)
        assert refused.status == Operation.Status.FAILED
        assert refused.error_code == "no_room", refused.error
        assert refused.error.startswith("refused: pool tank has "), refused.error
        assert "; this run's receive may need " in refused.error, refused.error
        link.refresh_from_db()
        assert link.state == ReplicationLink.State.REFUSED
        assert "keeps a reserve of" in link.last_error
        assert link.held == []  # nothing was held
        assert run_anyway(target, f"zfs list -H -o name -r {TARGET_PARENT}") == ""
        assert name in snapshots_of(source, "tank/pg/data")  # nothing lost on the source

        # zfs-fuse shows a free once its transaction group is synced: a snapshot waits.
        run_on(target, f"rm -f {base}/filler && zfs snapshot tank@pozolsync && "
                       "zfs destroy tank@pozolsync")
        operation = run_link(link)
        assert operation.status == Operation.Status.SUCCEEDED, operation.error
        assert snapshots_of(target, TARGETS[0]) == [name]
    finally:  # freed now, not in 30 s: the next test's discovery reads the pool
        run_anyway(target, f"rm -f {base}/filler && zfs snapshot tank@pozolsync && "
                           "zfs destroy tank@pozolsync")
        run_anyway(source, f"rm -f {source.pg_data_dir}/../ballast")


def test_a_bandwidth_limit_is_refused_where_the_source_cannot_apply_it(pair):
    """The test hosts have neither pv nor mbuffer (the plan's limiter): discovery says
    so, and a link asking for a limit is refused at save instead of ignored at run."""
    source, _, hosts = pair
    assert run_anyway(source, "command -v pv mbuffer || true").strip() == ""
    with pytest.raises(services.LinkError) as refused:
        make_link(hosts, bandwidth_limit=1 << 20)
    assert refused.value.fields["bandwidth_limit"][0].startswith(
        f"{hosts[0].name} has neither pv nor mbuffer")
    assert not ReplicationLink.objects.exists()


def test_the_target_keeps_what_the_links_counts_keep(pair):
    source, target, hosts = pair
    host1, _ = hosts
    cluster = host1.clusters.get()
    # One frequent slot (15 minutes) holds every snapshot of this test: it keeps its
    # earliest, the newest is kept anyway (newest of its policy, and the common one).
    link = make_link(hosts, keep_frequently=1)
    names = []
    for _ in range(3):
        names.append(snapshot(host1, cluster))
        time.sleep(1.1)
    operation = run_link(link)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    # Which one goes depends on whether a quarter hour began between the snapshots;
    # one of the older two goes, on both datasets (a cluster snapshot stays whole).
    gone = {full.partition("@")[2] for full in operation.result["destroyed"]}
    assert len(gone) == 1 and gone < set(names[:2]), operation.result
    assert sorted(operation.result["destroyed"]) == [f"{t}@{min(gone)}" for t in TARGETS]
    log = " ".join(operation.log_lines.values_list("text", flat=True))
    assert "on host2 (link to-host2 keeps 1 frequently)" in log
    for copy in TARGETS:
        assert snapshots_of(target, copy) == [n for n in names if n not in gone]
    assert snapshots_of(source, "tank/pg/data") == names  # the source keeps its own
