"""A clone ready to connect to: PoZoL against the floor of the bare tools, side by side,
for a small database and one 20x larger.

    .venv/bin/python -m tests.bench.clone_ready [--rounds 20] [--scales 5,100]
                                                [--subnet 127.0.92]

Not a test: it prints figures and the issue's goals next to them (p50 under 1.5 s
from the API request to a clone answering a query, within 2x of the floor, and the
large/small ratio under 1.3). It brings up one fresh test host with a pool big
enough for pgbench scale 100 per scale (two by default) and a real Celery worker on
a throwaway control-plane database (pozol_clonebench, dropped at the end). Each host
gets its scale of pgbench data and a CHECKPOINT (a clone of a cluster with WAL not yet checkpointed
replays it first: that time is the database's, not the clone's), then, interleaved,
--rounds times, host after host:

- floor: one `ssh host '...'` (OpenSSH, new connection) doing what a clone needs at
  the least: `zfs snapshot -r`, two `zfs clone`, remove postmaster.pid, point pg_wal
  at the WAL clone, `pg_ctl -w start` on another port, wait for pg_isready, one query;
- PoZoL "now": POST /api/clones/ with no snapshot (DRF's whole stack, a real token),
  timed from the request until a psql connection as the clone's role with the
  password the answer shows gets an answer, through the real worker;
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
GOAL_SECONDS, GOAL_FLOOR_FACTOR, GOAL_RATIO = 1.5, 2.0, 1.3


def main() -> None:
    args = _arguments()
    on_fresh_hosts(DATABASE, len(args.scales), args.subnet,
                   lambda hosts: _measure(hosts, args), pool_size=args.pool_gib << 30)


def _measure(fleet_hosts, args) -> None:
    """One host per scale, loaded first; then the rounds go host after host, so a busy
    moment of the machine falls on every size alike."""
    client = api_client("clone bench")
    sizes, hosts = {}, {}
    for scale, fleet_host in zip(args.scales, fleet_hosts, strict=True):
        sizes[scale] = _load(fleet_host, scale)
        print(f"scale {scale} loaded: {sizes[scale] / 2**20:.0f} MiB", flush=True)
        hosts[scale] = register(fleet_host, f"clonebench{scale}")
    timings = {scale: ([], [], []) for scale in args.scales}
    for index in range(args.rounds):
        for scale, fleet_host in zip(args.scales, fleet_hosts, strict=True):
            host = hosts[scale]
            cluster = host.clusters.get()
            floor, now, existing = timings[scale]
            floor.append(_floor(fleet_host, f"r{index}"))
            now.append(_pozol(client, host, cluster, None, f"now{index}"))
            existing.append(_pozol(client, host, cluster, _snapshot(host, cluster),
                                   f"old{index}"))
    _print({scale: (sizes[scale], *timings[scale]) for scale in args.scales}, args.rounds)


def _load(fleet_host, scale: int) -> int:
    """pgbench data of `scale` (replacing the last), checkpointed; the data dataset's
    referenced bytes."""
    from apps.demo.fleet.client import ssh

    connect = (f"-h {fleet_host.pg_socket_dir} -p {fleet_host.pg_port}")
    ssh(fleet_host, f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/"
                    f"pgbench -q -i -s {scale} {connect} {fleet_host.pg_database} && "
                    f"runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/psql -XAt "
                    f"{connect} -d postgres -c CHECKPOINT", timeout=3600)
    return int(ssh(fleet_host, "zfs get -Hp -o value referenced tank/pg/data").strip())


def api_client(label: str):
    """A DRF client with a real token of a new staff user, as automation calls the API."""
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from apps.accounts.models import ApiToken

    user = get_user_model().objects.create_user("bench", is_staff=True)
    _, raw = ApiToken.objects.issue(user, label)
    client = APIClient(HTTP_HOST="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client


def _snapshot(host, cluster) -> str:
    from apps.snapshots import services

    time.sleep(1.1)  # names have one-second resolution
    operation = services.snapshot_now(host, cluster=cluster)
    wait(operation.pk, poll=0.02)
    return operation.state["snapshot"]


def _pozol(client, host, cluster, snapshot: str | None, name: str) -> float:
    from apps.clones import services
    from apps.clones.models import Clone

    body = {"host": host.pk, "cluster": cluster.pk, "name": name}
    if snapshot:
        body["snapshot"] = snapshot
    time.sleep(1.1)
    started = time.monotonic()
    response = client.post("/api/clones/", body, format="json")
    if response.status_code != 202:
        raise SystemExit(f"POST /api/clones/ answered {response.status_code}: "
                         f"{response.content[:500]!r}")
    answer = response.json()
    wait(answer["operation"]["id"], poll=0.01)
    clone = Clone.objects.get(pk=answer["clone"]["id"])
    subprocess.run(["psql", f"postgresql://{clone.role}:{answer['password']}@"
                            f"{clone.layout['listen']}:{clone.port}/postgres", "-XAtc",
                    "select 1"], check=True, capture_output=True)
    seconds = time.monotonic() - started
    wait(services.destroy_clone(clone).pk)
    return seconds


def _floor(fleet_host, label: str) -> float:
    from apps.demo.fleet.client import ssh

    base = fleet_host.pg_data_dir.rsplit("/pg/data/", 1)[0]
    owner, bin_dir = fleet_host.pg_os_user, fleet_host.pg_bin_dir
    sock = f"{base}/floor_sock"
    started = time.monotonic()
    ssh(fleet_host, (
        f"set -e; zfs snapshot -r tank/pg@floor{label}; "
        f"zfs clone tank/pg/data@floor{label} tank/floor_data; "
        f"zfs clone tank/pg/wal@floor{label} tank/floor_wal; "
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
        f"zfs destroy -r tank/pg@floor{label}"))
    return seconds


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def _print(results: dict, rounds: int) -> None:
    print(f"\nhosts: zfs-fuse test hosts, one per scale, one Celery worker; {rounds} clones "
          "of each kind and size, seconds from the request to a clone answering a query")
    print(f"\n{'':50}{'scale':>6}{'MiB':>7}{'p50':>7}{'p95':>7}{'max':>7}")
    for scale, (size, floor, now, existing) in results.items():
        for label, values in (("floor: one ssh: snapshot, 2 clones, pg_ctl, query", floor),
                              ("PoZoL: POST /api/clones/, snapshot now", now),
                              ("PoZoL: POST /api/clones/, existing snapshot", existing)):
            print(f"{label:50}{scale:>6}{size / 2**20:>7.0f}"
                  f"{statistics.median(values):>7.2f}{p95(values):>7.2f}{max(values):>7.2f}")
    print("\ngoals (p50 of PoZoL 'snapshot now'):")
    medians = {scale: (statistics.median(r[1]), statistics.median(r[2]))
               for scale, r in results.items()}
    for scale, (floor, now) in medians.items():
        print(f"  scale {scale}: p50 {now:.2f} s < {GOAL_SECONDS} s: "
              f"{_verdict(now < GOAL_SECONDS)}; {now / floor:.2f}x the floor "
              f"< {GOAL_FLOOR_FACTOR}x: {_verdict(now / floor < GOAL_FLOOR_FACTOR)}")
    if len(medians) >= 2:
        small, large = min(medians), max(medians)
        ratio = medians[large][1] / medians[small][1]
        print(f"  scale {large} / scale {small}: {ratio:.2f} < {GOAL_RATIO}: "
              f"{_verdict(ratio < GOAL_RATIO)}")


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="clones of each kind and size")
    parser.add_argument("--scales", type=lambda text: [int(s) for s in text.split(",")],
                        default=[5, 100], help="pgbench scales, small first (5,100)")
    parser.add_argument("--pool-gib", type=int, default=6,
                        help="the test host's pool in GiB (scale 100 needs about 4)")
    parser.add_argument("--subnet", default=os.environ.get("POZOL_BENCH_SUBNET", "127.0.92"),
                        help="loopback /24 of the bench's test host (127.0.92)")
    return parser.parse_args()


if __name__ == "__main__":
    main()
