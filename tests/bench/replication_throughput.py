"""Replication throughput: a link's full send of ~1 GB and its 50 MiB increment, each
beside the one-hop pipe an operator would type.

    .venv/bin/python -m tests.bench.replication_throughput [--mib 1000] [--increment-mib 50]
        [--rounds 2] [--subnet 127.0.97] [--database pozol_replbench_<pid>]
        [--redis-url URL] [--timeline]

Not a test: it prints figures beside the issue's goals (PoZoL at least 0.9x the floor
for the full send, 0.7x for the increment). It brings up two fresh test hosts with
4 GiB pools and a real Celery worker on a throwaway control-plane database (one per
run, dropped at the end), writes --mib MiB of incompressible data into tank/bench on
host1 and snapshots it (@b1). Then, interleaved (floor, PoZoL, PoZoL, floor, ...),
--rounds times each:

- floor: `ssh host1 'zfs send -p tank/bench@b1 | ssh host2 zfs recv tank/raw'`, one hop
  as the link's own data goes (host1 is given a key of the bench's own to reach host2,
  like a link's; the outer ssh is a new OpenSSH connection from this machine), timed end
  to end; then --increment-mib MiB more random data written and snapshotted (@b2,
  untimed) and `ssh host1 'zfs send -p -I @b1 tank/bench@b2 | ssh host2 zfs recv
  tank/raw'` timed the same way. The same streams as the link's (its log shows the flags:
  -p, since the link carries the dataset's own properties, and -I), so both move the same
  bytes; what the link adds (its byte counter, its listings, holds and the rest) is its
  own cost;
- PoZoL: a new link (tank/bench -> host2 tank/pN) and `services.run_now` (what the API's
  run action calls), timed from the call to the operation's own finished_at (polled every
  0.5 s, a poll that costs the transfer nothing) through the real
  worker (key, listing both sides, the detached pipeline followed, inventories,
  pruning); then the same increment written and snapshotted, and run_now again, timed
  the same way. The transfer's own seconds (the detached unit, as the operation
  measured it) are shown beside each.

Each copy is destroyed and tank/bench rolled back to @b1 before the next round, so every
round sends the same full stream and the same increment. --timeline prints each PoZoL
run's log (seconds from the call) to show where the time goes.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import time
from pathlib import Path

from tests.bench import isolation
from tests.bench.fresh import on_fresh_hosts, register, wait

POOL_SIZE = 4 << 30
GOALS = {"full": 0.9, "increment": 0.7}


def main() -> None:
    args = _arguments()
    print(f"{isolation.apply(args)}; load before: {_load()}", flush=True)
    on_fresh_hosts(args.database, 2, args.subnet, lambda hosts: _measure(hosts, args),
                   pool_size=POOL_SIZE)


def _measure(fleet_hosts, args) -> None:
    from apps.demo.fleet.client import ssh

    started = time.monotonic()
    ssh(fleet_hosts[0], "zfs create tank/bench && dd if=/dev/urandom "
                        f"of=$(zfs get -H -o value mountpoint tank/bench)/data bs=1M "
                        f"count={args.mib} status=none && zfs snapshot tank/bench@b1",
        timeout=1800)
    written = time.monotonic() - started
    size = int(ssh(fleet_hosts[0], "zfs get -Hp -o value referenced tank/bench@b1").strip())
    hop = _one_hop(fleet_hosts)
    # registered after tank/bench exists, so discovery finds it
    source, target = (register(h, f"repl-{h.name}") for h in fleet_hosts)

    runs = {kind: {"floor": [], "pozol": [], "transfer": []} for kind in GOALS}
    for index in range(args.rounds):
        order = ("floor", "pozol") if index % 2 == 0 else ("pozol", "floor")
        for who in order:
            if who == "floor":
                full, increment = _floor(fleet_hosts, hop, args.increment_mib)
                runs["full"]["floor"].append(full)
                runs["increment"]["floor"].append(increment)
            else:
                for kind, (total, moved) in _pozol(source, target, fleet_hosts, index,
                                                   args).items():
                    runs[kind]["pozol"].append(total)
                    runs[kind]["transfer"].append(moved)
            print(f"round {index + 1} {who}: full {runs['full'][who][-1]:.2f} s, "
                  f"increment {runs['increment'][who][-1]:.2f} s; load {_load()}", flush=True)
    _print(runs, size, written, args)


def _print(runs: dict, size: int, written: float, args) -> None:
    print(f"\nhosts: two zfs-fuse test hosts on one machine (loopback SSH), one Celery "
          f"worker; tank/bench@b1 refers {size / 2**20:.0f} MiB of random data (written in "
          f"{written:.1f} s); {os.cpu_count()} CPUs, load average {_load()}")
    for kind, mib in (("full", size / 2**20), ("increment", args.increment_mib)):
        what = ("full send of tank/bench@b1" if kind == "full" else
                f"incremental send of {args.increment_mib} MiB (@b1 -> @b2)")
        print(f"\n{what + ', median of ' + str(args.rounds):64}{'seconds':>9}"
              f"{'MiB/s':>9}{'x floor':>9}")
        floor = statistics.median(runs[kind]["floor"])
        pozol = statistics.median(runs[kind]["pozol"])
        rows = (("floor: ssh host1 'zfs send | ssh host2 zfs recv'", floor),
                ("PoZoL: run_now to the finished operation", pozol),
                ("PoZoL: its transfer alone (the detached pipeline)",
                 statistics.median(runs[kind]["transfer"])))
        for label, seconds in rows:
            print(f"{label:64}{seconds:>9.2f}{mib / seconds:>9.1f}{floor / seconds:>9.2f}")
        factor = floor / pozol
        print(f"goal: PoZoL at least {GOALS[kind]}x the floor: {factor:.2f}x: "
              f"{'met' if factor >= GOALS[kind] else 'MISSED'}")
        print(f"all rounds, seconds: floor {_list(runs[kind]['floor'])}; "
              f"PoZoL {_list(runs[kind]['pozol'])}")
    print("\n(x floor: the floor's time over this one's)")


# ---- the floor --------------------------------------------------------------------------

def _one_hop(fleet_hosts) -> str:
    """The ssh command host1 runs to reach host2 directly: a key pair of the bench's own
    (under the fleet's state dir, its public half added to the fleet's authorized_keys)
    and host2's pinned host key, with the options a link's pipeline uses."""
    from apps.demo.fleet.client import ssh
    from apps.remote import keys
    from apps.replication.core.commands import known_hosts_line

    first, second = fleet_hosts
    directory = Path(first.authorized_keys_path).parent / "floor"
    directory.mkdir(mode=0o700)
    private, public = keys.generate_keypair("pozol-replbench-floor")
    key = directory / "id"
    key.write_text(private)
    key.chmod(0o600)
    known = directory / "known_hosts"
    known.write_text(known_hosts_line(second.address, second.port, second.host_public_key)
                     + "\n")
    with open(first.authorized_keys_path, "a") as lines:
        lines.write(public.strip() + "\n")
    command = shlex.join([
        "ssh", "-i", str(key), "-p", str(second.port),
        "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes",
        "-o", f"UserKnownHostsFile={known}", "-l", second.user, "--", second.address])
    ssh(first, f"{command} true")  # reachable before anything is timed
    return command


def _floor(fleet_hosts, hop: str, increment_mib: int) -> tuple[float, float]:
    from apps.demo.fleet.client import ssh

    source, target = fleet_hosts
    started = time.monotonic()
    ssh(source, f"zfs send -p tank/bench@b1 | {hop} zfs recv tank/raw", timeout=1800)
    full = time.monotonic() - started
    _increment(source, increment_mib)
    started = time.monotonic()
    ssh(source, f"zfs send -p -I @b1 tank/bench@b2 | {hop} zfs recv tank/raw",
        timeout=1800)
    increment = time.monotonic() - started
    _destroy(target, "tank/raw")
    _roll_back(source)
    return full, increment


def _increment(fleet_host, mib: int) -> None:
    from apps.demo.fleet.client import ssh

    ssh(fleet_host, "dd if=/dev/urandom of=$(zfs get -H -o value mountpoint tank/bench)/more "
                    f"bs=1M count={mib} status=none && zfs snapshot tank/bench@b2", timeout=600)


def _roll_back(fleet_host) -> None:
    """tank/bench as it was at @b1 (zfs-fuse may hold the mount busy for a moment)."""
    from apps.demo.fleet.client import ssh

    ssh(fleet_host, "i=0; until zfs rollback -r tank/bench@b1; do i=$((i+1)); "
                    "[ $i -ge 80 ] && exit 1; sleep 0.25; done")


# ---- PoZoL ------------------------------------------------------------------------------

def _pozol(source, target, fleet_hosts, index: int, args) -> dict[str, tuple[float, float]]:
    from apps.replication import services

    link = services.create_link(name=f"bench{index}", source_host=source, target_host=target,
                                target_parent=f"tank/p{index}", dataset="tank/bench",
                                interval_minutes=0)
    found = {"full": _run(services, link, args.timeline)}
    _increment(fleet_hosts[0], args.increment_mib)
    found["increment"] = _run(services, link, args.timeline)
    wait(services.delete_link(link).pk)
    _destroy(fleet_hosts[1], f"tank/p{index}")
    _roll_back(fleet_hosts[0])
    return found


def _run(services, link, timeline: bool) -> tuple[float, float]:
    from django.utils import timezone

    from apps.ops.models import Operation

    # Timed to the operation's own finished_at (the worker's clock is this machine's),
    # so the poll can be slow: a poll of the database every 0.02 s beside the transfer
    # took a share of the two cores the floor never pays (the transfer alone took
    # 11.07 s against 10.15 s with a 0.5 s poll, the floor 9.5 s both times).
    started = timezone.now()
    operation = services.run_now(link)
    wait(operation.pk, poll=0.5, limit=1800)
    operation = Operation.objects.get(pk=operation.pk)
    seconds = (operation.finished_at - started).total_seconds()
    if timeline:
        _timeline(operation)
    return seconds, operation.state["transfer"]["seconds"]


def _timeline(operation) -> None:
    """The run's log, each line at its seconds from the operation's creation."""
    print(f"-- operation {operation.pk} ({operation.result.get('action')}), "
          f"{(operation.finished_at - operation.created_at).total_seconds():.2f} s")
    for line in operation.log_lines.all():
        offset = (line.at - operation.created_at).total_seconds()
        print(f"  {offset:7.2f}  {line.text.splitlines()[0][:150]}")


def _destroy(fleet_host, dataset: str) -> None:
    """zfs-fuse holds a just-received dataset's mount busy for a moment: retry."""
    from apps.demo.fleet.client import ssh

    ssh(fleet_host, f"i=0; while zfs list {dataset} >/dev/null 2>&1; do "
                    f"zfs destroy -r -f {dataset} && break; i=$((i+1)); "
                    "[ $i -ge 80 ] && exit 1; sleep 0.25; done")


def _load() -> str:
    return ", ".join(f"{n:.1f}" for n in os.getloadavg())


def _list(values: list[float]) -> str:
    return ", ".join(f"{s:.2f}" for s in values)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=1000, help="MiB of data to replicate")
    parser.add_argument("--increment-mib", type=int, default=50,
                        help="MiB of new data in the incremental send")
    parser.add_argument("--rounds", type=int, default=2, help="timings of each kind")
    isolation.add_arguments(parser, subnet="127.0.97", database="pozol_replbench")
    parser.add_argument("--timeline", action="store_true",
                        help="print each PoZoL run's log with its seconds")
    return parser.parse_args()


if __name__ == "__main__":
    main()
