"""Snapshots on real test hosts: the inventory matches ZFS, and PostgreSQL starts from a
cluster snapshot PoZoL took under write load with every row committed before it.

The clone is made by hand here (PoZoL's clones are a later issue): clone the data
and WAL snapshots, point pg_wal at the cloned WAL, remove postmaster.pid, start on
another port. Clones, snapshots and the load table are removed afterwards: the
hosts are shared by the whole session.
"""

from __future__ import annotations

import time

import pytest

from apps.demo.fleet.client import ssh
from apps.ops.models import Operation
from apps.snapshots import services
from apps.snapshots.models import Snapshot
from tests.driving import drive
from tests.integration.conftest import register, run_on

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

CLONE_PORT = 5491
TABLE = "pozol_snapshot_load"


def run_anyway(fleet_host, command: str) -> str:
    """A clean-up command: its failure (nothing left to clean) is not the test's."""
    return ssh(fleet_host, command, check=False)


def psql(fleet_host, sql: str, *, port: int | None = None, socket: str | None = None) -> str:
    return run_on(fleet_host, (
        f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/psql -X -At "
        f"-v ON_ERROR_STOP=1 -h {socket or fleet_host.pg_socket_dir} "
        f"-p {port or fleet_host.pg_port} -d postgres -c \"{sql}\"")).strip()


def discovered(fleet_host):
    host = register(fleet_host)
    operation = drive(host.operations.get())
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert "snapshots" in operation.result  # discovery listed them too
    host.refresh_from_db()
    return host


def zfs_snapshots(fleet_host) -> dict[str, tuple[int, int]]:
    """name -> (referenced, userrefs), read with plain zfs over OpenSSH."""
    out = run_on(fleet_host, "zfs list -H -t snapshot -o name")
    names = out.split()
    if not names:
        return {}
    props = run_on(fleet_host, "zfs get -Hp -o name,property,value referenced,userrefs "
                               + " ".join(names))
    found: dict[str, dict[str, int]] = {}
    for line in props.splitlines():
        name, prop, value = line.split("\t")
        found.setdefault(name, {})[prop] = int(value)
    return {name: (p["referenced"], p["userrefs"]) for name, p in found.items()}


@pytest.fixture
def write_load(fleet_hosts):
    """Rows committed one by one in a loop on host 1, until the test ends."""
    fleet_host = fleet_hosts[0]
    psql(fleet_host, f"DROP TABLE IF EXISTS {TABLE}; "
                     f"CREATE TABLE {TABLE} (id bigserial PRIMARY KEY, at timestamptz "
                     "DEFAULT clock_timestamp(), pad text DEFAULT repeat('x', 200))")
    # A few hundred commits a second for at most a minute, detached from the ssh
    # session in its own process group (killed as a group afterwards). Flat out, the
    # loop would only measure zfs-fuse's FUSE queue.
    loop = (f"for i in $(seq 1 12000); do echo \"INSERT INTO {TABLE} DEFAULT VALUES;\"; "
            "sleep 0.005; done")
    pid = run_on(fleet_host, (
        f"cd / || exit 1; setsid sh -c '({loop}) | runuser -u {fleet_host.pg_os_user} -- "
        f"{fleet_host.pg_bin_dir}/psql -X -q -h {fleet_host.pg_socket_dir} "
        f"-p {fleet_host.pg_port} -d postgres' </dev/null >/dev/null 2>&1 & echo $!")).strip()
    try:
        yield fleet_host
    finally:
        run_anyway(fleet_host, f"kill -- -{pid}")
        time.sleep(0.3)
        psql(fleet_host, f"DROP TABLE IF EXISTS {TABLE}")


def test_the_inventory_matches_zfs_with_holds_clones_and_origins(fleet_hosts, delivered):
    fleet_host = fleet_hosts[1]
    run_on(fleet_host, "zfs snapshot tank/pg/wal@byhand && zfs hold keep tank/pg/wal@byhand "
                       "&& zfs snapshot tank/pg/data@cloned && "
                       "zfs clone tank/pg/data@cloned tank/inventory_clone")
    try:
        host = discovered(fleet_host)
        truth = zfs_snapshots(fleet_host)
        recorded = {s.full_name: s for s in Snapshot.objects.filter(host=host)}
        assert set(recorded) == set(truth)
        for name, (referenced, userrefs) in truth.items():
            assert (recorded[name].referenced, recorded[name].userrefs) == (referenced, userrefs)
        assert recorded["tank/pg/wal@byhand"].origin == "hand"
        assert recorded["tank/pg/wal@byhand"].held
        assert recorded["tank/pg/data@cloned"].clones == ["tank/inventory_clone"]


        # Snapshot now with a hold, release, destroy: each checked with plain zfs.
        operation = drive(services.snapshot_now(host, dataset="tank/pg/data", hold=True))
        assert operation.status == Operation.Status.SUCCEEDED, operation.error
        full_name = f"tank/pg/data@{operation.state['snapshot']}"
        assert zfs_snapshots(fleet_host)[full_name][1] == 1
        mine = Snapshot.objects.get(host=host, dataset="tank/pg/data",
                                    name=operation.state["snapshot"])
        assert mine.held and mine.origin == "pozol"
        assert drive(services.release(mine)).status == Operation.Status.SUCCEEDED
        assert zfs_snapshots(fleet_host)[full_name][1] == 0
        mine.refresh_from_db()
        operation = drive(services.destroy(mine))
        assert operation.status == Operation.Status.SUCCEEDED, operation.error
        assert full_name not in zfs_snapshots(fleet_host)
        assert not Snapshot.objects.filter(pk=mine.pk).exists()
    finally:
        run_anyway(fleet_host, "zfs release keep tank/pg/wal@byhand")
        destroy(fleet_host, "tank/inventory_clone", "tank/pg/wal@byhand", "tank/pg/data@cloned")


@pytest.mark.parametrize(("sibling", "method", "why"), [
    (False, "recursive", "data and WAL sit alone under tank/pg"),
    # Another dataset under tank/pg rules -r out, and zfs-fuse refuses several
    # snapshots in one command: pg_backup_start/stop around two snapshots.
    (True, "backup", "tank/pg also holds tank/pg/other"),
])
def test_postgres_starts_from_a_cluster_snapshot_taken_under_write_load(
        write_load, delivered, sibling, method, why):
    fleet_host = write_load
    if sibling:
        run_on(fleet_host, "zfs create tank/pg/other")
    try:
        snapshot_clone_and_count(fleet_host, method, why)
    finally:
        if sibling:
            destroy(fleet_host, "tank/pg/other")


def snapshot_clone_and_count(fleet_host, method: str, why: str) -> None:
    host = discovered(fleet_host)
    cluster = host.clusters.get()
    time.sleep(1.0)  # the load is writing
    committed = int(psql(fleet_host, f"SELECT max(id) FROM {TABLE}"))
    assert committed > 0
    operation = drive(services.snapshot_now(host, cluster=cluster, label="under load"))
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert operation.result["method"] == method
    log = " ".join(operation.log_lines.values_list("text", flat=True))
    assert why in log
    name = operation.state["snapshot"]
    after = int(psql(fleet_host, f"SELECT max(id) FROM {TABLE}"))
    assert after > committed, "the load must still be writing"

    props = run_on(fleet_host, f"zfs get -H -o value pozol:owner,pozol:policy,pozol:label "
                               f"tank/pg/data@{name}").split("\n")
    assert props[:3] == ["pozol", "manual", "under load"]
    mine = Snapshot.objects.get(host=host, dataset="tank/pg/data", name=name)
    assert mine.origin == "pozol" and mine.label == "under load"

    try:
        rows, until = rows_on_a_clone(fleet_host, name, committed)
        assert rows == committed, f"{committed - rows} committed rows missing from the clone"
        assert until >= committed
    finally:
        drop_clone(fleet_host)
        run_anyway(fleet_host, f"zfs destroy tank/pg@{name}")  # only -r made it
        destroy(fleet_host, *(f"{dataset}@{name}" for dataset in ("tank/pg/data", "tank/pg/wal")))


def rows_on_a_clone(fleet_host, name: str, committed: int) -> tuple[int, int]:
    """Clone data and WAL of @name, start PostgreSQL there, count the rows up to `committed`."""
    socket = start_on_clones(fleet_host, f"tank/pg/data@{name}", f"tank/pg/wal@{name}",
                             "tank/snaptest", CLONE_PORT)
    rows = int(psql(fleet_host, f"SELECT count(*) FROM {TABLE} WHERE id <= {committed}",
                    port=CLONE_PORT, socket=socket))
    until = int(psql(fleet_host, f"SELECT max(id) FROM {TABLE}", port=CLONE_PORT,
                     socket=socket))
    return rows, until


def start_on_clones(fleet_host, data_snapshot: str, wal_snapshot: str, prefix: str,
                    port: int) -> str:
    """Clone a cluster's data and WAL snapshots as <prefix>_data and <prefix>_wal, start
    PostgreSQL on them (postmaster.pid removed, pg_wal pointed at the WAL clone) on
    `port`; returns its socket directory. stop_clones() undoes it."""
    base = fleet_host.pg_data_dir.rsplit("/pg/data/", 1)[0]
    socket = f"{base}/{prefix.rsplit('/', 1)[-1]}_sock"
    run_on(fleet_host, f"zfs clone {data_snapshot} {prefix}_data && "
                       f"zfs clone {wal_snapshot} {prefix}_wal")
    data = run_on(fleet_host, f"zfs get -H -o value mountpoint {prefix}_data").strip()
    wal = run_on(fleet_host, f"zfs get -H -o value mountpoint {prefix}_wal").strip()
    run_on(fleet_host, (
        f"cd {data}/pgdata && rm -f postmaster.pid && "
        f"if [ -L pg_wal ]; then rm pg_wal && ln -s {wal}/pg_wal pg_wal; fi && "
        f"mkdir -p {socket} && chown {fleet_host.pg_os_user} {socket} && "
        f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/pg_ctl -D "
        f"{data}/pgdata -w -t 120 -l {socket}/clone.log -o "
        f"\"-p {port} -k {socket} -c listen_addresses=''\" start"))
    return socket


def drop_clone(fleet_host) -> None:
    stop_clones(fleet_host, "tank/snaptest")


def stop_clones(fleet_host, prefix: str) -> None:
    """Stop the clones' PostgreSQL and destroy both clones, waiting for the unmount."""
    data = run_anyway(fleet_host, f"zfs get -H -o value mountpoint {prefix}_data").strip()
    run_anyway(fleet_host, (
        f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/pg_ctl -D "
        f"{data}/pgdata -m immediate -w stop"))
    destroy(fleet_host, f"{prefix}_data", f"{prefix}_wal")


def destroy(fleet_host, *names: str) -> None:
    """Destroy each, in order, retrying while zfs-fuse still holds a mount busy."""
    run_on(fleet_host, (
        f"for d in {' '.join(names)}; do i=0; "
        "while zfs list -t all \"$d\" >/dev/null 2>&1; do zfs destroy -f \"$d\" && break; "
        "i=$((i+1)); [ $i -ge 40 ] && exit 1; sleep 0.25; done; done"))
