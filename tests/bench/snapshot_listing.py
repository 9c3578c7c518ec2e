"""Snapshots at scale: listing 10,000 snapshots, and "snapshot now" from the API request.

    .venv/bin/python -m tests.bench.snapshot_listing [--snapshots 10000] [--rounds 5]
        [--subnet 127.0.98]

Not a test: it prints figures (goals: listing+parse within 2x of a bare ssh; snapshot
now under 1 s). It brings up one fresh test host and a real Celery worker on a
throwaway control-plane database (pozol_snapbench, dropped at the end), then:

1. "snapshot now" of the host's cluster through the API (Django's test client in
   this process, a real worker), timed from the request to the operation's end,
   on the fresh host;
2. makes --snapshots snapshots in one remote shell: 99 datasets under one parent,
   and `zfs snapshot -r` of the parent, so each command makes 100 snapshots;
3. times, side by side and interleaved, --rounds times each: a bare
   `ssh host zfs get -Hp ...` (OpenSSH, a new connection each time, output
   discarded) against PoZoL's listing and parse over its pooled connection, and
   PoZoL's whole refresh (listing, parse, inventory recorded);
4. "snapshot now" again, with those snapshots on the host (its step lists them all).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

from tests.bench.fresh import on_fresh_hosts, register, wait

DATABASE = "pozol_snapbench"


def main() -> None:
    args = _arguments()
    on_fresh_hosts(DATABASE, 1, args.subnet, lambda hosts: _measure(hosts[0], args))


def _measure(fleet_host, args) -> None:
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from apps.accounts.models import ApiToken

    host = register(fleet_host, "snapbench")
    user = get_user_model().objects.create_user("bench", is_staff=True)  # an operator
    _, raw = ApiToken.objects.issue(user, "bench")
    api = APIClient(HTTP_HOST="localhost")
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")

    cluster = host.clusters.get()
    fresh = [_snapshot_now(api, host.pk, cluster.pk) for _ in range(args.rounds)]

    started = time.monotonic()
    _make_snapshots(fleet_host, args.snapshots)
    made = time.monotonic() - started

    bare, pozol, refresh, count = _listing(fleet_host, host, args.rounds)
    loaded = [_snapshot_now(api, host.pk, cluster.pk) for _ in range(args.rounds)]

    print(f"\nhost: zfs-fuse test host, {count} snapshots listed "
          f"({args.snapshots} made in {made:.1f} s by `zfs snapshot -r`, 100 per command)")
    print(f"\n{'listing all snapshots (median of ' + str(args.rounds) + ')':52}{'seconds':>10}")
    print(f"{'bare: ssh host zfs get -Hp ... > /dev/null':52}{bare:>10.3f}")
    print(f"{'PoZoL: list + parse (pooled SSH connection)':52}{pozol:>10.3f}")
    print(f"{'ratio PoZoL / bare (goal <= 2)':52}{pozol / bare:>10.2f}")
    print(f"{'PoZoL: list + parse + record the inventory':52}{refresh:>10.3f}")
    print(f"\n{'snapshot now, API request to finished operation':52}{'median':>10}{'max':>8}")
    print(f"{'on the fresh host (goal < 1 s)':52}{statistics.median(fresh):>10.3f}"
          f"{max(fresh):>8.3f}")
    print(f"{f'with {count} snapshots on the host':52}{statistics.median(loaded):>10.3f}"
          f"{max(loaded):>8.3f}")


def _snapshot_now(api, host_id: int, cluster_id: int) -> float:
    time.sleep(1.1)  # names have one-second resolution
    started = time.monotonic()
    response = api.post(f"/api/hosts/{host_id}/snapshots/", {"cluster": cluster_id},
                        format="json")
    if response.status_code != 202:
        raise SystemExit(f"snapshot now refused: {response.content!r}")
    wait(response.json()["id"], poll=0.01)
    return time.monotonic() - started


def _make_snapshots(fleet_host, count: int) -> None:
    from apps.demo.fleet.client import ssh

    rounds = max(1, count // 100)
    ssh(fleet_host, (
        "zfs create tank/snapbench && for i in $(seq 1 99); do zfs create tank/snapbench/c$i "
        f"|| exit 1; done && for i in $(seq 1 {rounds}); do zfs snapshot -r "
        "tank/snapbench@s$i || exit 1; done"))


def _listing(fleet_host, host, rounds: int) -> tuple[float, float, float, int]:
    from apps.remote import ssh as product_ssh
    from apps.snapshots import inventory
    from apps.snapshots.core import commands

    bare_command = commands.listing().text
    argv = ["ssh", "-F", "/dev/null", "-i", fleet_host.private_key_path, "-p",
            str(fleet_host.port), "-o", f"UserKnownHostsFile={fleet_host.known_hosts_path}",
            "-o", "BatchMode=yes", f"{fleet_host.user}@{fleet_host.address}", bare_command]
    runner = product_ssh.session(host.ssh_target())
    bare, pozol, refresh, count = [], [], [], 0
    for _ in range(rounds):
        started = time.monotonic()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        bare.append(time.monotonic() - started)
        started = time.monotonic()
        count = len(inventory.list_host(runner))
        pozol.append(time.monotonic() - started)
        started = time.monotonic()
        inventory.refresh(host, runner)
        refresh.append(time.monotonic() - started)
    return (statistics.median(bare), statistics.median(pozol), statistics.median(refresh),
            count)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--snapshots", type=int, default=10_000, help="snapshots to make")
    parser.add_argument("--rounds", type=int, default=5, help="timings of each kind")
    parser.add_argument("--subnet", default=os.environ.get("POZOL_BENCH_SUBNET", "127.0.98"),
                        help="loopback /24 of the bench's test host (127.0.98)")
    return parser.parse_args()


if __name__ == "__main__":
    main()
