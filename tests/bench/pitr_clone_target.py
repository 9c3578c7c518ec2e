"""A clone to a moment on a replication link's target: PoZoL against the floor of the
bare tools, side by side, in one run (issue 23's benchmark, on the target).

    .venv/bin/python -m tests.bench.pitr_clone_target [--rounds 5] [--scale 5]
        [--replay-seconds 3] [--subnet 127.0.94] [--database pozol_pitrtarget_<pid>]
        [--redis-url URL]

Not a test: it prints figures. It brings up two fresh test hosts (the same image,
pgbench data of --scale on the first) and a real Celery worker on a throwaway
control-plane database (dropped at the end). The database (by default named after
this process), the test hosts' subnet and the Redis database are the caller's to
choose, so runs beside each other share nothing. PoZoL archives the first host's WAL
(archive_timeout 10 s) and a link (interval 0: run on demand) carries the cluster and
its archive to the second.

Per round, on the source as tests/bench/pitr_clone.py does it: a snapshot,
--replay-seconds of pgbench, a row and the moment right after it, a second row, its
segment archived; then the link runs (not timed). Then, on the target, interleaved:

- floor: one `ssh target '...'` (OpenSSH, new connection) doing what such a clone needs
  at the least: `zfs clone` of the received data and WAL snapshots and of the carried
  archive's received snapshot, a restore_command reading that clone, recovery_target_time
  and promote, `pg_ctl start`, waiting until the server leaves recovery, one query;
- PoZoL: POST /api/clones/ with `link` and `at` (DRF's whole stack, a real token), timed
  from the request until a psql connection as the clone's role answers, through the
  real worker.

Each answer is checked: the first row is there and the second is not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

from tests.bench import isolation
from tests.bench.clone_ready import api_client, p95
from tests.bench.fresh import on_fresh_hosts, register, wait
from tests.bench.pitr_clone import ROWS, _enable, _load, _prepare

FLOOR_PORT = 6997
TARGET_PARENT = "tank/backup"


def main() -> None:
    args = _arguments()
    print(isolation.apply(args), flush=True)
    on_fresh_hosts(args.database, 2, args.subnet, lambda hosts: _measure(hosts, args),
                   pool_size=args.pool_gib << 30)


def _measure(fleet_hosts, args) -> None:
    from apps.replication import services as replication

    source, target = fleet_hosts
    _load(source, args.scale)
    host1 = register(source, "pitrsource")
    host2 = register(target, "pitrtarget")
    cluster = host1.clusters.get()
    archive = _enable(cluster)
    link = replication.create_link(name="pitr-bench", source_host=host1, target_host=host2,
                                   target_parent=TARGET_PARENT,
                                   cluster_data_dir=cluster.data_dir, interval_minutes=0)
    print(f"archiving into {archive.directory}; link {link.name} carries it to "
          f"{host2.name}:{TARGET_PARENT}", flush=True)
    client = api_client("pitr target bench")
    timings = {"floor": [], "moment": []}
    replayed = []
    for index in range(args.rounds):
        snapshot, moment, wal_bytes = _prepare(source, host1, cluster, archive,
                                               args.replay_seconds)
        wait(replication.run_now(link).pk, poll=0.1, limit=1800)
        link.refresh_from_db()
        replayed.append(wal_bytes)
        timings["floor"].append(_floor(target, link, cluster, snapshot.split("@", 1)[-1],
                                       moment, source.pg_database))
        timings["moment"].append(_pozol(client, link, cluster, moment, f"tgt{index}",
                                        source.pg_database))
    _print(timings, replayed, args)


def _pozol(client, link, cluster, moment, name: str, database: str) -> float:
    from apps.clones import services
    from apps.clones.models import Clone

    started = time.monotonic()
    response = client.post("/api/clones/", {"link": link.pk, "cluster": cluster.pk,
                                            "name": name, "at": moment.isoformat()},
                           format="json")
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
    if got.returncode != 0 or got.stdout.strip() != "1":
        raise SystemExit(f"clone {name}: rows {got.stdout.strip()!r}, expected '1' "
                         f"({got.stderr.strip()})")
    wait(services.destroy_clone(clone).pk)
    return seconds


def _floor(fleet_host, link, cluster, snapshot: str, moment, database: str) -> float:
    """By hand on the target: the received snapshots and the carried archive's."""
    from apps.demo.fleet.client import ssh
    from apps.replication.link_rows import core_link

    core = core_link(link)
    targets = core.targets()
    data, wal = targets[cluster.data_dataset.name], targets[cluster.wal_dataset.name]
    base = fleet_host.pg_data_dir.rsplit("/pg/data/", 1)[0]
    owner, bin_dir = fleet_host.pg_os_user, fleet_host.pg_bin_dir
    sock = f"{base}/pitr_floor_sock"
    psql = f"runuser -u {owner} -- {bin_dir}/psql -XAt -h {sock} -p {FLOOR_PORT} -d postgres"
    clones = "tank/pitr_floor_data tank/pitr_floor_wal tank/pitr_floor_archive"
    started = time.monotonic()
    ssh(fleet_host, (
        f"set -e; zfs clone {data}@{snapshot} tank/pitr_floor_data; "
        f"zfs clone {wal}@{snapshot} tank/pitr_floor_wal; "
        f"zfs clone '{core.archive_target}@{link.archive_snapshot}' tank/pitr_floor_archive; "
        f"d={base}/pitr_floor_data/pgdata; cd $d; rm -f postmaster.pid; "
        f"ln -sfn {base}/pitr_floor_wal/pg_wal pg_wal; mkdir -p {sock}; chown {owner} {sock}; "
        f"printf '%s\\n' \"restore_command = 'cp {base}/pitr_floor_archive/%f %p'\" "
        f"\"recovery_target_time = '{moment.isoformat(sep=' ')}'\" "
        "\"recovery_target_action = 'promote'\" \"archive_mode = 'off'\" "
        f">> postgresql.auto.conf; touch recovery.signal; chown {owner} recovery.signal; "
        f"cd /; runuser -u {owner} -- {bin_dir}/pg_ctl -D $d -w -l {sock}/log -o "
        f"\"-p {FLOOR_PORT} -k {sock} -c listen_addresses=''\" start > /dev/null; "
        f"until [ \"$({psql} -c 'select pg_is_in_recovery()' 2>/dev/null)\" = f ]; "
        "do sleep 0.05; done; "
        f"{psql} -c 'select 1' > /dev/null"), timeout=300)
    seconds = time.monotonic() - started
    on_data = psql.replace("-d postgres", f"-d {database}")
    rows = ssh(fleet_host, f"cd / && {on_data} -c \"{ROWS}\"").strip()
    ssh(fleet_host, (
        f"cd / && runuser -u {owner} -- {bin_dir}/pg_ctl -D {base}/pitr_floor_data/pgdata "
        f"-m immediate -w stop > /dev/null; for d in {clones}; "
        "do i=0; while zfs list $d > /dev/null 2>&1; do zfs destroy -r $d && break; "
        "i=$((i+1)); [ $i -ge 80 ] && exit 1; sleep 0.25; done; done; rm -rf " + sock))
    if rows != "1":
        raise SystemExit(f"the floor's clone on the target holds rows {rows!r}, expected '1'")
    return seconds


def _print(timings: dict, replayed: list[int], args) -> None:
    print(f"\nhosts: two zfs-fuse test hosts (pgbench scale {args.scale} on the source), one "
          f"Celery worker; load average {os.getloadavg()[0]:.1f} at the end")
    print(f"\na clone on the link's target ready to query, {args.rounds} rounds, seconds "
          f"from the request; WAL to replay per round p50 "
          f"{statistics.median(replayed) / 2**20:.1f} MiB")
    print(f"{'':62}{'p50':>7}{'p95':>7}{'max':>7}")
    labels = {"floor": "floor: one ssh: 3 clones, restore_command, promote, query",
              "moment": "PoZoL: POST /api/clones/ with link and at (replays to it)"}
    for key, label in labels.items():
        values = timings[key]
        print(f"{label:62}{statistics.median(values):>7.2f}{p95(values):>7.2f}"
              f"{max(values):>7.2f}")
    factor = statistics.median(timings["moment"]) / statistics.median(timings["floor"])
    print(f"PoZoL to a moment on the target: {factor:.2f}x the floor")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="clones of each kind")
    parser.add_argument("--scale", type=int, default=5, help="pgbench scale of the source")
    parser.add_argument("--replay-seconds", type=int, default=3,
                        help="pgbench seconds between the snapshot and the moment")
    parser.add_argument("--pool-gib", type=int, default=4, help="each test host's pool")
    isolation.add_arguments(parser, subnet="127.0.94", database="pozol_pitrtarget")
    return parser.parse_args()


if __name__ == "__main__":
    main()
