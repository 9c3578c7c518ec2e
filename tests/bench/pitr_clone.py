"""Clones to a moment and the cost of archiving: PoZoL against the floor of the bare
tools, side by side, in one run.

    .venv/bin/python -m tests.bench.pitr_clone [--rounds 8] [--scale 5] [--replay-seconds 3]
        [--subnet 127.0.93]

Not a test: it prints figures (issue 23's benchmark). It brings up two fresh test hosts
(the same image, the same pgbench data of --scale, checkpointed) and a real Celery worker
on a throwaway control-plane database (pozol_pitrbench_<random>, dropped at the end).
PoZoL archives the first host's WAL (`wal.enable`, archive_timeout 10 s); the second
does not archive.

Archive overhead: --rounds pgbench runs of 10 s (2 clients, TPC-B-like), alternating
between the archiving host and the other, and the WAL each run archived.

A clone to a moment, per round: a snapshot, then --replay-seconds of pgbench (WAL to
replay), a row and the moment right after it, more pgbench and a second row; its
segment archived and the archive checked. Then, interleaved:

- floor: one `ssh host '...'` (OpenSSH, new connection) doing what such a clone needs at
  the least: two `zfs clone` of that snapshot, a restore_command reading the live
  archive, recovery_target_time and promote, `pg_ctl start`, waiting until the server
  leaves recovery, one query;
- PoZoL: POST /api/clones/ with `at` (DRF's whole stack, a real token), timed from the
  request until a psql connection as the clone's role answers, through the real worker;
- PoZoL from the snapshot itself (no replay), for what the moment adds.

Each answer is checked: the first row is there and the second is not.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import time
from datetime import UTC, datetime

from tests.bench.clone_ready import api_client, p95
from tests.bench.fresh import on_fresh_hosts, register, wait

TABLE = "pozol_pitr_rows"
ROWS = f"SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM {TABLE}"
FLOOR_PORT = 6998
ARCHIVE_TIMEOUT = 10


def main() -> None:
    args = _arguments()
    database = f"pozol_pitrbench_{secrets.token_hex(3)}"
    on_fresh_hosts(database, 2, args.subnet, lambda hosts: _measure(hosts, args),
                   pool_size=args.pool_gib << 30)


def _measure(fleet_hosts, args) -> None:
    archiving, plain = fleet_hosts
    for fleet_host in fleet_hosts:
        _load(fleet_host, args.scale)
    host = register(archiving, "pitrbench")
    register(plain, "plainbench")
    cluster = host.clusters.get()
    archive = _enable(cluster)
    print(f"archiving into {archive.directory} (archive_timeout {ARCHIVE_TIMEOUT} s)",
          flush=True)

    overhead = {"archiving": [], "not archiving": []}
    for _ in range(args.rounds):
        overhead["archiving"].append(_pgbench_run(archiving, archive.directory))
        overhead["not archiving"].append(_pgbench_run(plain, None))

    client = api_client("pitr bench")
    timings = {"floor": [], "moment": [], "snapshot": []}
    replayed = []
    for index in range(args.rounds):
        snapshot, moment, wal_bytes = _prepare(archiving, host, cluster, archive,
                                               args.replay_seconds)
        replayed.append(wal_bytes)
        timings["floor"].append(_floor(archiving, archive.directory, snapshot, moment,
                                       f"r{index}"))
        database = archiving.pg_database
        timings["moment"].append(_pozol(client, host, cluster, {"at": moment.isoformat()},
                                        f"at{index}", "1", database))
        timings["snapshot"].append(_pozol(client, host, cluster, {"snapshot": snapshot},
                                          f"snap{index}", "", database))
    _print(overhead, timings, replayed, args)


def _psql(fleet_host, sql: str, database: str | None = None, timeout: int = 600) -> str:
    from apps.demo.fleet.client import ssh

    return ssh(fleet_host, f"cd / && runuser -u {fleet_host.pg_os_user} -- "
                           f"{fleet_host.pg_bin_dir}/psql -XAt -h {fleet_host.pg_socket_dir} "
                           f"-p {fleet_host.pg_port} -d {database or fleet_host.pg_database} "
                           f"-c \"{sql}\"", timeout=timeout).strip()


def _load(fleet_host, scale: int) -> None:
    from apps.demo.fleet.client import ssh

    ssh(fleet_host, f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/"
                    f"pgbench -q -i -s {scale} -h {fleet_host.pg_socket_dir} "
                    f"-p {fleet_host.pg_port} {fleet_host.pg_database}", timeout=3600)
    _psql(fleet_host, f"CREATE TABLE {TABLE} (id int, at timestamptz DEFAULT now())")
    _psql(fleet_host, "CHECKPOINT", "postgres")


def _enable(cluster):
    from apps.wal import services

    archive, operation = services.enable(cluster, ARCHIVE_TIMEOUT)
    wait(operation.pk, limit=600)
    archive.refresh_from_db()
    return archive


def _pgbench_run(fleet_host, archive_dir: str | None) -> tuple[float, int]:
    """TPS of one 10 s run, and the bytes it added to the archive (0 without one)."""
    from apps.demo.fleet.client import ssh

    before = _archive_bytes(fleet_host, archive_dir)
    out = ssh(fleet_host, f"cd / && runuser -u {fleet_host.pg_os_user} -- "
                          f"{fleet_host.pg_bin_dir}/pgbench -n -c 2 -j 1 -T 10 "
                          f"-h {fleet_host.pg_socket_dir} -p {fleet_host.pg_port} "
                          f"{fleet_host.pg_database}", timeout=120)
    tps = next(float(line.split("=")[1].split()[0]) for line in out.splitlines()
               if line.startswith("tps ="))
    if archive_dir:
        _psql(fleet_host, "SELECT pg_switch_wal()", "postgres")
        time.sleep(1)
    return tps, _archive_bytes(fleet_host, archive_dir) - before


def _archive_bytes(fleet_host, archive_dir: str | None) -> int:
    from apps.demo.fleet.client import ssh

    if not archive_dir:
        return 0
    return int(ssh(fleet_host, f"du -sb --apparent-size {archive_dir} | cut -f1").strip())


def _prepare(fleet_host, host, cluster, archive, replay_seconds: int):
    """A snapshot, WAL after it, the moment between two rows, everything archived and
    checked; the snapshot's name, the moment and the WAL bytes from snapshot to moment."""
    from apps.demo.fleet.client import ssh
    from apps.snapshots import services as snapshots
    from apps.wal import services

    _psql(fleet_host, f"TRUNCATE {TABLE}")
    time.sleep(1.1)  # snapshot names have one-second resolution
    operation = snapshots.snapshot_now(host, cluster=cluster)
    wait(operation.pk, poll=0.05)
    operation.refresh_from_db()
    snapshot = operation.state["snapshot"]
    start_lsn = _psql(fleet_host, "SELECT pg_current_wal_lsn()", "postgres")
    bench = (f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/pgbench "
             f"-n -c 2 -j 1 -T {replay_seconds} -h {fleet_host.pg_socket_dir} "
             f"-p {fleet_host.pg_port} {fleet_host.pg_database} > /dev/null")
    ssh(fleet_host, bench, timeout=120)
    _psql(fleet_host, f"INSERT INTO {TABLE} (id) VALUES (1)")
    moment = datetime.fromtimestamp(float(_psql(
        fleet_host, "SELECT extract(epoch from clock_timestamp())")), UTC)
    wal_bytes = int(_psql(fleet_host, f"SELECT pg_current_wal_lsn() - '{start_lsn}'::pg_lsn",
                          "postgres"))
    time.sleep(0.2)
    _psql(fleet_host, f"INSERT INTO {TABLE} (id) VALUES (2)")
    segment = _psql(fleet_host, "SELECT pg_walfile_name(pg_switch_wal())", "postgres")
    deadline = time.monotonic() + 60
    while segment not in ssh(fleet_host, f"ls {archive.directory}"):
        if time.monotonic() > deadline:
            raise SystemExit(f"segment {segment} was not archived in 60 s")
        time.sleep(0.2)
    wait(services.check(archive).pk, poll=0.05)
    return snapshot, moment, wal_bytes


def _pozol(client, host, cluster, asked: dict, name: str, expected: str,
           database: str) -> float:
    from apps.clones import services
    from apps.clones.models import Clone

    started = time.monotonic()
    response = client.post("/api/clones/", {"host": host.pk, "cluster": cluster.pk,
                                            "name": name, **asked}, format="json")
    if response.status_code != 202:
        raise SystemExit(f"POST /api/clones/ answered {response.status_code}: "
                         f"{response.content[:500]!r}")
    answer = response.json()
    wait(answer["operation"]["id"], poll=0.01)
    clone = Clone.objects.get(pk=answer["clone"]["id"])
    url = f"postgresql://{clone.role}:{answer['password']}@{clone.layout['listen']}:{clone.port}"
    subprocess.run(["psql", f"{url}/postgres", "-XAtc", "select 1"], check=True,
                   capture_output=True)
    seconds = time.monotonic() - started
    got = subprocess.run(["psql", f"{url}/{database}", "-XAtc", ROWS], capture_output=True,
                         text=True)
    if got.returncode != 0 or got.stdout.strip() != expected:
        raise SystemExit(f"clone {name}: rows {got.stdout.strip()!r}, expected {expected!r} "
                         f"({got.stderr.strip()})")
    wait(services.destroy_clone(clone).pk)
    return seconds


def _floor(fleet_host, archive_dir: str, snapshot: str, moment: datetime, label: str) -> float:
    from apps.demo.fleet.client import ssh

    base = fleet_host.pg_data_dir.rsplit("/pg/data/", 1)[0]
    owner, bin_dir = fleet_host.pg_os_user, fleet_host.pg_bin_dir
    name = snapshot.split("@", 1)[-1]
    sock = f"{base}/pitr_floor_sock"
    psql = f"runuser -u {owner} -- {bin_dir}/psql -XAt -h {sock} -p {FLOOR_PORT} -d postgres"
    started = time.monotonic()
    ssh(fleet_host, (
        f"set -e; zfs clone tank/pg/data@{name} tank/pitr_floor_data; "
        f"zfs clone tank/pg/wal@{name} tank/pitr_floor_wal; "
        f"d={base}/pitr_floor_data/pgdata; cd $d; rm -f postmaster.pid; "
        f"ln -sfn {base}/pitr_floor_wal/pg_wal pg_wal; mkdir -p {sock}; chown {owner} {sock}; "
        f"printf '%s\\n' \"restore_command = 'cp {archive_dir}/%f %p'\" "
        f"\"recovery_target_time = '{moment.isoformat(sep=' ')}'\" "
        "\"recovery_target_action = 'promote'\" \"archive_mode = 'off'\" "
        f">> postgresql.auto.conf; touch recovery.signal; chown {owner} recovery.signal; "
        f"cd /; runuser -u {owner} -- {bin_dir}/pg_ctl -D $d -w -l {sock}/log -o "
        f"\"-p {FLOOR_PORT} -k {sock} -c listen_addresses=''\" start > /dev/null; "
        f"until [ \"$({psql} -c 'select pg_is_in_recovery()' 2>/dev/null)\" = f ]; "
        "do sleep 0.05; done; "
        f"{psql} -c 'select 1' > /dev/null"), timeout=300)
    seconds = time.monotonic() - started
    on_data = psql.replace("-d postgres", f"-d {fleet_host.pg_database}")
    rows = ssh(fleet_host, f"cd / && {on_data} -c \"{ROWS}\"").strip()
    ssh(fleet_host, (
        f"cd / && runuser -u {owner} -- {bin_dir}/pg_ctl -D {base}/pitr_floor_data/pgdata "
        f"-m immediate -w stop > /dev/null; for d in tank/pitr_floor_data tank/pitr_floor_wal; "
        "do i=0; while zfs list $d > /dev/null 2>&1; do zfs destroy -r $d && break; "
        "i=$((i+1)); [ $i -ge 80 ] && exit 1; sleep 0.25; done; done; rm -rf " + sock))
    if rows != "1":
        raise SystemExit(f"the floor's clone holds rows {rows!r}, expected '1' ({label})")
    return seconds


def _print(overhead: dict, timings: dict, replayed: list[int], args) -> None:
    print(f"\nhosts: two zfs-fuse test hosts (pgbench scale {args.scale}), one Celery worker;"
          f" load average {os.getloadavg()[0]:.1f} at the end")
    print(f"\narchive overhead: {args.rounds} pgbench runs of 10 s on each host, alternating")
    print(f"{'':28}{'tps p50':>10}{'tps min':>10}{'archived MiB/run':>18}")
    for label, runs in overhead.items():
        tps = [t for t, _ in runs]
        archived = statistics.median(b for _, b in runs) / 2**20
        print(f"{label:28}{statistics.median(tps):>10.1f}{min(tps):>10.1f}{archived:>18.1f}")
    ratio = statistics.median(t for t, _ in overhead["archiving"]) / \
        statistics.median(t for t, _ in overhead["not archiving"])
    print(f"archiving keeps {ratio:.2f}x the tps of not archiving")

    print(f"\na clone ready to query, {args.rounds} rounds, seconds from the request; "
          f"WAL to replay per round p50 {statistics.median(replayed) / 2**20:.1f} MiB")
    print(f"{'':58}{'p50':>7}{'p95':>7}{'max':>7}")
    labels = {"floor": "floor: one ssh: 2 clones, restore_command, promote, query",
              "moment": "PoZoL: POST /api/clones/ with at (replays to it)",
              "snapshot": "PoZoL: POST /api/clones/ of the snapshot (no replay)"}
    for key, label in labels.items():
        values = timings[key]
        print(f"{label:58}{statistics.median(values):>7.2f}{p95(values):>7.2f}"
              f"{max(values):>7.2f}")
    factor = statistics.median(timings["moment"]) / statistics.median(timings["floor"])
    print(f"PoZoL to a moment: {factor:.2f}x the floor")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=8, help="runs and clones of each kind")
    parser.add_argument("--scale", type=int, default=5, help="pgbench scale of both hosts")
    parser.add_argument("--replay-seconds", type=int, default=3,
                        help="pgbench seconds between the snapshot and the moment")
    # pgbench's WAL grows to max_wal_size (1 GB) between checkpoints: the default 1 GiB
    # pool fills, and zfs-fuse stalls writers on a full pool.
    parser.add_argument("--pool-gib", type=int, default=4, help="each test host's pool")
    parser.add_argument("--subnet", default=os.environ.get("POZOL_BENCH_SUBNET", "127.0.93"),
                        help="loopback /24 of the bench's test hosts (127.0.93)")
    return parser.parse_args()


if __name__ == "__main__":
    main()
