"""Replication throughput: a link's full send of a ~1 GB dataset against the bare tools.

    .venv/bin/python -m tests.bench.replication_throughput [--mib 1000] [--rounds 2]
        [--subnet 127.0.97]

Not a test: it prints figures (goal: PoZoL at least 0.9x the bare pipeline). It brings
up two fresh test hosts with 4 GiB pools and a real Celery worker on a throwaway
control-plane database (pozol_replbench, dropped at the end), writes --mib MiB of
incompressible data into tank/bench on host1 and snapshots it, then, interleaved
(bare, PoZoL, PoZoL, bare, ...), --rounds times each:

- bare: `ssh host1 zfs send tank/bench@b1 | ssh host2 zfs recv tank/raw` from this
  machine (OpenSSH, new connections), timed end to end;
- PoZoL: a new link (tank/bench -> host2 tank/pN) and `services.run_now` (what the API's
  run action calls), timed from the call to the finished operation with a real worker:
  key, listing both sides, the detached `zfs send -p | dd | ssh host2 pozol-recv`
  pipeline polled every second, listing and recording both inventories. The transfer's
  own seconds (the detached unit, as the operation measured it) are shown beside.

Each copy is destroyed before the next round, so every round is a full send.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

from tests.bench.fresh import on_fresh_hosts, register, wait

DATABASE = "pozol_replbench"
POOL_SIZE = 4 << 30


def main() -> None:
    args = _arguments()
    on_fresh_hosts(DATABASE, 2, args.subnet, lambda hosts: _measure(hosts, args),
                   pool_size=POOL_SIZE)


def _measure(fleet_hosts, args) -> None:
    from apps.demo.fleet.client import ssh

    started = time.monotonic()
    ssh(fleet_hosts[0], "zfs create tank/bench && dd if=/dev/urandom "
                        f"of=$(zfs get -H -o value mountpoint tank/bench)/data bs=1M "
                        f"count={args.mib} status=none && zfs snapshot tank/bench@b1")
    written = time.monotonic() - started
    size = int(ssh(fleet_hosts[0], "zfs get -Hp -o value referenced tank/bench@b1").strip())
    # registered after tank/bench exists, so discovery finds it
    source, target = (register(h, f"repl-{h.name}") for h in fleet_hosts)

    bare, pozol, transfer = [], [], []
    for index in range(args.rounds):
        order = ("bare", "pozol") if index % 2 == 0 else ("pozol", "bare")
        for kind in order:
            if kind == "bare":
                bare.append(_bare(fleet_hosts))
            else:
                total, moved = _pozol(source, target, fleet_hosts[1], index)
                pozol.append(total)
                transfer.append(moved)

    mib = size / 2**20
    print(f"\nhosts: two zfs-fuse test hosts on one machine (loopback SSH); tank/bench@b1 "
          f"refers {mib:.0f} MiB of random data (written in {written:.1f} s)")
    print(f"\n{'full send of tank/bench@b1, median of ' + str(args.rounds):56}"
          f"{'seconds':>9}{'MiB/s':>9}{'x bare':>8}")
    median_bare = statistics.median(bare)
    rows = [("bare: ssh host1 zfs send | ssh host2 zfs recv", median_bare),
            ("PoZoL: run_now to finished operation", statistics.median(pozol)),
            ("PoZoL: its transfer alone (detached pipeline)", statistics.median(transfer))]
    for label, seconds in rows:
        print(f"{label:56}{seconds:>9.2f}{mib / seconds:>9.1f}{median_bare / seconds:>8.2f}")
    print("\n(x bare: the bare pipeline's time over this one's; the goal is at least 0.90 "
          "for the whole run)")
    print(f"all rounds, seconds: bare {', '.join(f'{s:.2f}' for s in bare)}; "
          f"PoZoL {', '.join(f'{s:.2f}' for s in pozol)}")


def _bare(fleet_hosts) -> float:

    one, two = (_ssh_argv(h) for h in fleet_hosts)
    started = time.monotonic()
    send = subprocess.Popen([*one, "zfs send tank/bench@b1"], stdout=subprocess.PIPE)
    subprocess.run([*two, "zfs recv tank/raw"], stdin=send.stdout, check=True)
    send.stdout.close()
    if send.wait() != 0:
        raise SystemExit("the bare zfs send failed")
    seconds = time.monotonic() - started
    _destroy(fleet_hosts[1], "tank/raw")
    return seconds


def _pozol(source, target, target_fleet_host, index: int) -> tuple[float, float]:
    from apps.ops.models import Operation
    from apps.replication import services

    link = services.create_link(name=f"bench{index}", source_host=source, target_host=target,
                                target_parent=f"tank/p{index}", dataset="tank/bench",
                                interval_minutes=0)
    started = time.monotonic()
    operation = services.run_now(link)
    wait(operation.pk, poll=0.05, limit=1800)
    seconds = time.monotonic() - started
    transfer = Operation.objects.get(pk=operation.pk).state["transfer"]["seconds"]
    wait(services.delete_link(link).pk)
    _destroy(target_fleet_host, f"tank/p{index}")
    return seconds, transfer


def _destroy(fleet_host, dataset: str) -> None:
    """zfs-fuse holds a just-received dataset's mount busy for a moment: retry."""
    from apps.demo.fleet.client import ssh

    ssh(fleet_host, f"i=0; while zfs list {dataset} >/dev/null 2>&1; do "
                    f"zfs destroy -r -f {dataset} && break; i=$((i+1)); "
                    "[ $i -ge 80 ] && exit 1; sleep 0.25; done")


def _ssh_argv(fleet_host) -> list[str]:
    return ["ssh", "-F", "/dev/null", "-i", fleet_host.private_key_path, "-p",
            str(fleet_host.port), "-o", f"UserKnownHostsFile={fleet_host.known_hosts_path}",
            "-o", "BatchMode=yes", f"{fleet_host.user}@{fleet_host.address}"]


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=1000, help="MiB of data to replicate")
    parser.add_argument("--rounds", type=int, default=2, help="timings of each kind")
    parser.add_argument("--subnet", default=os.environ.get("POZOL_BENCH_SUBNET", "127.0.97"),
                        help="loopback /24 of the bench's test hosts (127.0.97)")
    return parser.parse_args()


if __name__ == "__main__":
    main()
