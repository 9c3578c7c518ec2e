"""A clone ready to connect to: PoZoL against the floor of the bare tools, side by side.

    .venv/bin/python -m tests.bench.clone_ready [--rounds 5] [--subnet 127.0.85]

Not a test: it prints figures (goal: under 1.5 s from the request to a clone one can
connect to, whatever the database's size). It brings up one fresh test host and a real
Celery worker on a throwaway control-plane database (pozol_clonebench, dropped at the
end), loads pgbench data (scale 20, about 350 MB) and runs a CHECKPOINT (a clone of a
cluster with WAL not yet checkpointed replays it first: that time is the
database's, not the clone's), then, interleaved, --rounds times:

- floor: one `ssh host '...'` (OpenSSH, new connection) doing what a clone needs at
  the least: `zfs snapshot -r`, two `zfs clone`, remove postmaster.pid, point pg_wal
  at the WAL clone, `pg_ctl -w start` on another port, wait for pg_isready, one query;
- PoZoL "now": services.create_clone with no snapshot (what the API's create calls),
  timed from the call until a psql connection as the clone's role with its password
  answers, through a real worker;
- PoZoL from an existing snapshot: the same with the snapshot named.

Each clone is destroyed before the next round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

from tests.bench.fresh import on_fresh_hosts, register, wait

DATABASE = "pozol_clonebench"
FLOOR_PORT = 6999


def main() -> None:
    args = _arguments()
    on_fresh_hosts(DATABASE, 1, args.subnet, lambda hosts: _measure(hosts[0], args),
                   pool_size=2 << 30)


def _measure(fleet_host, args) -> None:
    from apps.demo.fleet.client import ssh

    ssh(fleet_host, f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/"
                    f"pgbench -q -i -s 20 -h {fleet_host.pg_socket_dir} -p "
                    f"{fleet_host.pg_port} {fleet_host.pg_database} && "
                    f"runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/psql -XAt "
                    f"-h {fleet_host.pg_socket_dir} -p {fleet_host.pg_port} -d postgres "
                    "-c CHECKPOINT")
    host = register(fleet_host, "clonebench")
    cluster = host.clusters.get()
    size = int(ssh(fleet_host, "zfs get -Hp -o value referenced tank/pg/data").strip())
    floor, now, existing = [], [], []
    for index in range(args.rounds):
        floor.append(_floor(fleet_host, index))
        now.append(_pozol(host, cluster, None, f"now{index}"))
        existing.append(_pozol(host, cluster, _snapshot(host, cluster), f"old{index}"))

    print(f"\nhost: zfs-fuse test host; the cluster's data dataset refers "
          f"{size / 2**20:.0f} MiB (pgbench scale 20)")
    print(f"\n{'request to a clone answering a query, ' + str(args.rounds) + ' rounds':56}"
          f"{'median':>9}{'max':>8}")
    rows = [("floor: one ssh doing snapshot, 2 clones, pg_ctl, query", floor),
            ("PoZoL: create_clone, snapshot now (goal < 1.5 s)", now),
            ("PoZoL: create_clone from an existing snapshot", existing)]
    for label, values in rows:
        print(f"{label:56}{statistics.median(values):>9.2f}{max(values):>8.2f}")


def _snapshot(host, cluster) -> str:
    from apps.snapshots import services

    time.sleep(1.1)  # names have one-second resolution
    operation = services.snapshot_now(host, cluster=cluster)
    wait(operation.pk, poll=0.02)
    return operation.state["snapshot"]


def _pozol(host, cluster, snapshot: str | None, name: str) -> float:
    from apps.clones import services
    from apps.clones.models import Clone

    time.sleep(1.1)
    started = time.monotonic()
    clone, operation, password = services.create_clone(host, cluster, snapshot=snapshot,
                                                       name=name)
    wait(operation.pk, poll=0.01)
    clone = Clone.objects.get(pk=clone.pk)
    subprocess.run(["psql", f"postgresql://{clone.role}:{password}@{clone.layout['listen']}:"
                            f"{clone.port}/postgres", "-XAtc", "select 1"],
                   check=True, capture_output=True)
    seconds = time.monotonic() - started
    wait(services.destroy_clone(clone).pk)
    return seconds


def _floor(fleet_host, index: int) -> float:
    from apps.demo.fleet.client import ssh

    base = fleet_host.pg_data_dir.rsplit("/pg/data/", 1)[0]
    owner, bin_dir = fleet_host.pg_os_user, fleet_host.pg_bin_dir
    sock = f"{base}/floor_sock"
    started = time.monotonic()
    ssh(fleet_host, (
        f"set -e; zfs snapshot -r tank/pg@floor{index}; "
        f"zfs clone tank/pg/data@floor{index} tank/floor_data; "
        f"zfs clone tank/pg/wal@floor{index} tank/floor_wal; "
        f"d={base}/floor_data/pgdata; cd $d; rm -f postmaster.pid; "
        f"ln -sfn {base}/floor_wal/pg_wal pg_wal; mkdir -p {sock}; chown {owner} {sock}; "
        f"cd /; runuser -u {owner} -- {bin_dir}/pg_ctl -D $d -w -l {sock}/log -o "
        f"\"-p {FLOOR_PORT} -k {sock} -c listen_addresses=''\" start > /dev/null; "
        f"until {bin_dir}/pg_isready -q -h {sock} -p {FLOOR_PORT}; do sleep 0.05; done; "
        f"runuser -u {owner} -- {bin_dir}/psql -XAt -h {sock} -p {FLOOR_PORT} -d postgres "
        "-c 'select 1' > /dev/null"))
    seconds = time.monotonic() - started
    ssh(fleet_host, (
        f"cd / && runuser -u {owner} -- {bin_dir}/pg_ctl -D {base}/floor_data/pgdata "
        f"-m immediate -w stop > /dev/null; for d in tank/floor_data tank/floor_wal; do "
        "i=0; while zfs list $d > /dev/null 2>&1; do zfs destroy -r $d && break; "
        "i=$((i+1)); [ $i -ge 80 ] && exit 1; sleep 0.25; done; done; "
        f"zfs destroy -r tank/pg@floor{index}"))
    return seconds


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timings of each kind")
    parser.add_argument("--subnet", default=os.environ.get("POZOL_BENCH_SUBNET", "127.0.85"),
                        help="loopback /24 of the bench's test host (127.0.85)")
    return parser.parse_args()


if __name__ == "__main__":
    main()
