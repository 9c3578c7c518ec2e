"""A new cluster answering a query: PoZoL against the floor of the bare tools, side by side.

    .venv/bin/python -m tests.bench.cluster_create [--rounds 5] [--subnet 127.0.93]
        [--database pozol_createbench_<pid>] [--redis-url URL]

Not a test: it prints figures and the issue's goal next to them (PoZoL within 1.5x of
the floor, issue 24). It brings up one fresh test host and a real Celery worker on a
throwaway control-plane database (one per run, dropped at the end); then,
interleaved, --rounds times:

- floor: one `ssh host '...'` (OpenSSH, new connection) doing what a cluster needs at
  the least: `zfs create` of the parent, data and WAL datasets with the same
  properties, the owner given the mountpoints, initdb -X with checksums, the port
  and socket in postgresql.auto.conf, `pg_ctl -w start`, one query;
- PoZoL: POST /api/hosts/{id}/clusters/ (DRF's whole stack, a real token), timed from
  the request until `psql -c 'select 1'` over ssh as the owner answers, through the
  real worker (which also rediscovers the host before the operation ends).

Each cluster is stopped and its datasets destroyed before the next round (PoZoL's
through retire-cluster with datasets=destroy, untimed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from tests.bench import isolation
from tests.bench.clone_ready import api_client
from tests.bench.fresh import on_fresh_hosts, register, wait

FLOOR_PORT = 6998
GOAL_FLOOR_FACTOR = 1.5
PROPERTIES = "-o recordsize={rs} -o compression=on -o atime=off -o logbias=latency"


def main() -> None:
    args = _arguments()
    print(f"{isolation.apply(args)}; load before: "
          f"{', '.join(f'{n:.1f}' for n in os.getloadavg())}", flush=True)
    on_fresh_hosts(args.database, 1, args.subnet, lambda hosts: _measure(hosts[0], args))


def _measure(fleet_host, args) -> None:
    client = api_client("create bench")
    host = register(fleet_host, "createbench")
    floor, pozol = [], []
    for index in range(args.rounds):
        floor.append(_floor(fleet_host, f"floor{index}"))
        pozol.append(_pozol(client, fleet_host, host, f"made{index}"))
        print(f"round {index + 1}: floor {floor[-1]:.2f} s, PoZoL {pozol[-1]:.2f} s",
              flush=True)
    _print(floor, pozol)


def _pozol(client, fleet_host, host, name: str) -> float:
    from apps.demo.fleet.client import ssh
    from apps.fleet.models import PgCluster
    from apps.ops.models import Operation

    started = time.monotonic()
    response = client.post(f"/api/hosts/{host.pk}/clusters/", {"major": 15, "name": name},
                           format="json")
    if response.status_code != 202:
        raise SystemExit(f"POST clusters answered {response.status_code}: "
                         f"{response.content[:500]!r}")
    wait(response.json()["operation"]["id"], poll=0.01)
    operation = Operation.objects.get(pk=response.json()["operation"]["id"])
    if operation.status != Operation.Status.SUCCEEDED:
        raise SystemExit(f"creating {name} failed: {operation.error}")
    cluster = PgCluster.objects.get(pk=operation.result["cluster"])
    ssh(fleet_host, f"cd / && runuser -u {cluster.owner} -- {cluster.bin_dir}/psql -XAt "
                    f"-h {cluster.socket_dir} -p {cluster.port} -d postgres -c 'select 1'")
    seconds = time.monotonic() - started
    retired = client.post(f"/api/hosts/{host.pk}/retire-cluster/",
                          {"cluster": cluster.pk, "stop": True, "datasets": "destroy"},
                          format="json")
    wait(retired.json()["id"])
    return seconds


def _floor(fleet_host, name: str) -> float:
    from apps.demo.fleet.client import ssh

    owner, bin_dir, sock = fleet_host.pg_os_user, fleet_host.pg_bin_dir, fleet_host.pg_socket_dir
    parent = f"tank/floor/{name}"
    started = time.monotonic()
    ssh(fleet_host, (
        f"set -e; zfs create -p {parent}; "
        f"zfs create {PROPERTIES.format(rs='16K')} {parent}/data; "
        f"zfs create {PROPERTIES.format(rs='128K')} {parent}/wal; "
        f"dm=$(zfs get -H -o value mountpoint {parent}/data); "
        f"wm=$(zfs get -H -o value mountpoint {parent}/wal); "
        f"chown {owner}: $dm $wm; chmod 700 $dm $wm; cd /; "
        f"runuser -u {owner} -- {bin_dir}/initdb -D $dm/pgdata -X $wm/pg_wal "
        "--data-checksums --encoding=UTF8 --auth-local=peer --auth-host=scram-sha-256 "
        "> /dev/null; "
        f"printf \"port = '{FLOOR_PORT}'\\nunix_socket_directories = '{sock}'\\n"
        "listen_addresses = ''\\n\" >> $dm/pgdata/postgresql.auto.conf; "
        f"runuser -u {owner} -- {bin_dir}/pg_ctl -D $dm/pgdata -l $dm/server.log -w start "
        "> /dev/null; "
        f"runuser -u {owner} -- {bin_dir}/psql -XAt -h {sock} -p {FLOOR_PORT} -d postgres "
        "-c 'select 1' > /dev/null"))
    seconds = time.monotonic() - started
    ssh(fleet_host, (
        f"cd / && dm=$(zfs get -H -o value mountpoint {parent}/data) && "
        f"runuser -u {owner} -- {bin_dir}/pg_ctl -D $dm/pgdata -m fast -w stop > /dev/null; "
        f"i=0; while zfs list {parent} > /dev/null 2>&1; do zfs destroy -r {parent} && break; "
        "i=$((i+1)); [ $i -ge 80 ] && exit 1; sleep 0.25; done"))
    return seconds


def _print(floor: list[float], pozol: list[float]) -> None:
    print(f"\nhost: a zfs-fuse test host, one Celery worker; {len(floor)} clusters each, "
          "seconds from the request to the new cluster answering a query; "
          f"{os.cpu_count()} CPUs, load average "
          f"{', '.join(f'{n:.1f}' for n in os.getloadavg())}")
    print(f"\n{'':58}{'p50':>7}{'min':>7}{'max':>7}")
    for label, values in (("floor: one ssh: 3 zfs create, initdb, pg_ctl, query", floor),
                          ("PoZoL: POST /api/hosts/{id}/clusters/, then query", pozol)):
        print(f"{label:58}{statistics.median(values):>7.2f}{min(values):>7.2f}"
              f"{max(values):>7.2f}")
    factor = statistics.median(pozol) / statistics.median(floor)
    print(f"\ngoal: PoZoL's p50 within {GOAL_FLOOR_FACTOR}x the floor's: {factor:.2f}x: "
          f"{'met' if factor <= GOAL_FLOOR_FACTOR else 'MISSED'}")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="clusters of each kind")
    isolation.add_arguments(parser, subnet="127.0.93", database="pozol_createbench")
    return parser.parse_args()


if __name__ == "__main__":
    main()
