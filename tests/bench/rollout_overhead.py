"""A rollout over lightweight hosts with no validation: the control plane's own cost per host.

    .venv/bin/python -m tests.bench.rollout_overhead [--hosts 20] [--wave-size 5]
        [--rounds 5] [--concurrency 2] [--subnet 127.0.85]
        [--database pozol_rolloutbench_<pid>] [--redis-url URL]

Not a test: it prints figures side by side (issue 24: "a rollout over 20 lightweight
hosts with a no-op validation: the control plane's own overhead per host"). The hosts
are tests/bench/light_hosts.py's: sshd processes on their own loopback addresses, all
this machine, so the profile must change nothing on them. It sets only a ZFS property
and these hosts have no ZFS: each host's plan is empty and the host is done at its
check, as a host already tuned would be. What a rollout does per host is then its
own work: a discovery as the rollout starts (the baseline), one at the host's turn,
the drift check and the plan, every step recorded, through a real Celery worker.

Interleaved, --rounds times:
- floor: the same SSH work done directly, in the same order, with as many threads as
  the worker has processes: every host's discovery (apps.remote.gather.discover over
  the pooled connection), then wave by wave (the canary alone, then --wave-size hosts)
  each host's discovery again; no database, no Celery;
- PoZoL: POST /api/rollouts/ (validation "none"), timed until the rollout operation
  succeeded, every host done.
The difference over the hosts is the overhead per host: scheduling, the rollout's
polls (apps.rollouts.steps.POLL_SECONDS) and the child operations' bookkeeping.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.bench import isolation
from tests.bench.database import database_of_its_own
from tests.bench.fresh import server, wait
from tests.bench.light_hosts import light_hosts, registered


def main() -> None:
    args = _arguments()
    print(f"{isolation.apply(args)}; load before: {_load()}", flush=True)
    with database_of_its_own(server(), args.database), tempfile.TemporaryDirectory(
            prefix="pozol-rolloutbench-") as work:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django_settings")
        import django

        django.setup()
        from django.core.management import call_command

        for noisy in ("pozol.remote", "paramiko"):  # a line per command, per host
            logging.getLogger(noisy).setLevel(logging.WARNING)

        from tests.workers import Worker

        call_command("migrate", verbosity=0)
        with light_hosts(Path(work), args.hosts, args.subnet) as lights:
            first = registered(lights[0])
            hosts = [first] + [registered(light, first) for light in lights[1:]]
            worker = Worker("pozol", "rolloutbench", Path(work), concurrency=args.concurrency)
            try:
                _measure(hosts, args)
            finally:
                worker.stop()


def _measure(hosts: list, args: argparse.Namespace) -> None:
    from apps.tuning import services as tuning
    from tests.bench.clone_ready import api_client

    client = api_client("rollout bench")
    profile = tuning.create_profile(name="Bench no-op", settings={
        "zfs": {"data": {"atime": "off"}}, "module": {}, "sysctl": {}, "postgres": {}})
    waves = _waves([host.pk for host in hosts], args.wave_size)
    _floor(hosts, waves, args.concurrency)  # connects every host once, untimed
    floor, pozol = [], []
    for index in range(args.rounds):
        floor.append(_floor(hosts, waves, args.concurrency))
        pozol.append(_pozol(client, profile, hosts, args.wave_size))
        print(f"round {index + 1}: floor {floor[-1]:.2f} s, PoZoL {pozol[-1]:.2f} s",
              flush=True)
    _print(len(hosts), len(waves), args, floor, pozol)


def _floor(hosts: list, waves: list[list[int]], threads: int) -> float:
    from django.conf import settings

    from apps.remote import ssh
    from apps.remote.gather import discover

    by_id = {host.pk: host for host in hosts}

    def one(host_id: int) -> None:
        host = by_id[host_id]
        run = ssh.session(host.ssh_target(),
                          connect_timeout=settings.POZOL["SSH_CONNECT_TIMEOUT"])
        discover(run, login=host.user)

    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, by_id))  # the baseline
        for wave in waves:
            list(pool.map(one, wave))
    return time.monotonic() - started


def _pozol(client, profile, hosts: list, wave_size: int) -> float:
    from apps.rollouts.models import Rollout

    started = time.monotonic()
    answer = client.post("/api/rollouts/", {
        "profile": profile.pk, "hosts": [host.pk for host in hosts],
        "wave_size": wave_size, "validation": "none"}, format="json")
    if answer.status_code != 201:
        raise SystemExit(f"POST /api/rollouts/ answered {answer.status_code}: {answer.data}")
    wait(answer.data["operation"]["id"], poll=0.05, limit=900)
    elapsed = time.monotonic() - started
    rollout = Rollout.objects.get(pk=answer.data["id"])
    states = set(rollout.hosts.values_list("state", flat=True))
    if states != {"done"}:
        raise SystemExit(f"rollout {rollout.pk} ended with hosts {states}")
    return elapsed


def _waves(host_ids: list[int], wave_size: int) -> list[list[int]]:
    """The canary (the first host) alone, then wave_size at a time, as
    apps.rollouts.services lays them out."""
    rest = host_ids[1:]
    return [host_ids[:1]] + [rest[i:i + wave_size] for i in range(0, len(rest), wave_size)]


def _print(hosts: int, waves: int, args: argparse.Namespace, floor: list[float],
           pozol: list[float]) -> None:
    from apps.rollouts.steps import POLL_SECONDS

    f, p = statistics.median(floor), statistics.median(pozol)
    print(f"\n{hosts} lightweight hosts (sshd on loopback, this machine, no ZFS: every "
          f"plan empty), {waves} waves (canary, then {args.wave_size}), validation none; "
          f"worker and floor with {args.concurrency} processes/threads; median of "
          f"{args.rounds} rounds; {os.cpu_count()} CPUs, load average {_load()}")
    print(f"{'a whole rollout':58}{'seconds':>9}{'per host':>10}{'ratio':>8}")
    print(f"{'floor: the same discoveries, directly, in the same waves':58}{f:>9.2f}"
          f"{f / hosts:>10.3f}{1:>8.2f}")
    print(f"{'PoZoL: POST /api/rollouts/ until it succeeded':58}{p:>9.2f}"
          f"{p / hosts:>10.3f}{p / f:>8.2f}")
    print(f"\ncontrol-plane overhead per host: {(p - f) / hosts:.3f} s (a child's end wakes "
          f"the rollout, Operation.waiter; its {POLL_SECONDS} s poll is the fallback)")


def _load() -> str:
    return ", ".join(f"{n:.1f}" for n in os.getloadavg())


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=20, help="lightweight hosts (20)")
    parser.add_argument("--wave-size", type=int, default=5, help="hosts per wave (5)")
    parser.add_argument("--rounds", type=int, default=5, help="rollouts and floors (5)")
    parser.add_argument("--concurrency", type=int, default=2,
                        help="the worker's processes and the floor's threads (2)")
    isolation.add_arguments(parser, subnet="127.0.85", database="pozol_rolloutbench")
    return parser.parse_args()


if __name__ == "__main__":
    main()
