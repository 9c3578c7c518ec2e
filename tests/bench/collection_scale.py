"""A telemetry round over a fleet of lightweight SSH hosts against a bare `ssh host true`.

    .venv/bin/python -m tests.bench.collection_scale [--hosts 24] [--rounds 10]
        [--subnet 127.0.84]

Not a test: it prints figures side by side (the issue's goal: a round within
1.5x of a bare parallel `ssh host true` over the same hosts). The real test
hosts (zfs-fuse, sshd, PostgreSQL each) are too heavy to run 20 of here, so
each host is an OpenSSH server of its own on its own loopback address
(--subnet .101, .102, ...), with its own host key, logging in as this user:
the product's sample script really runs, against this machine's real /proc and
whatever PostgreSQL discovery finds here, with no ZFS (as tests/integration
/test_plain_host.py's host). Each host is added and discovered as an operator
would (pinned key, real discovery), in a control-plane database of its own
(pozol_prom_collect, dropped at the end).

Then, interleaved, --rounds times: every host's `ssh host true` in parallel
(OpenSSH, a new connection each time, as a cron script would) against
`collect_fleet()`, the beat task's round (every host sampled over the
collector's pooled connection, parsed and stored). The first round, which
connects, is shown apart, and so is how many connections the collector holds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.bench.database import database_of_its_own
from tests.bench.fresh import server
from tests.bench.light_hosts import LightHost, light_hosts, registered

DATABASE = "pozol_prom_collect"


def main() -> None:
    args = _arguments()
    with database_of_its_own(server(), DATABASE), tempfile.TemporaryDirectory(
            prefix="pozol-collect-") as work:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django_settings")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        with light_hosts(Path(work), args.hosts, args.subnet) as hosts:
            started = time.monotonic()
            first = registered(hosts[0])
            for host in hosts[1:]:
                registered(host, first)
            print(f"{len(hosts)} hosts added (the first discovered) in "
                  f"{time.monotonic() - started:.0f} s", flush=True)
            _measure(hosts, args.rounds)


# -- measuring ---------------------------------------------------------------------------

def _measure(hosts: list[LightHost], rounds: int) -> None:
    from django.conf import settings

    from apps.remote import ssh
    from apps.telemetry import services

    first = _timed(services.collect_fleet)
    bare, collect = [], []
    for _ in range(rounds):
        bare.append(_timed(lambda: _bare_parallel(hosts)))
        collect.append(_timed(services.collect_fleet))
    taken = services.collect_fleet()
    failed = [t for t in taken if t.sample is None]
    if failed:
        raise SystemExit(f"{len(failed)} samples failed, e.g.: {failed[0].error}")
    held = len(ssh._pool)  # the collector's pooled connections, one per host and key
    missing = {source for t in taken for source in t.sample.missing}
    load = ", ".join(f"{n:.1f}" for n in os.getloadavg())

    print(f"\nfleet: {len(hosts)} lightweight SSH hosts (sshd on its own loopback address, "
          f"the real sample script on this machine's /proc and PostgreSQL, no ZFS); "
          f"median of {rounds} rounds; {os.cpu_count()} CPUs, load average {load}")
    clusters = max(len(t.sample.clusters) for t in taken)
    print(f"sources not available on these hosts: {', '.join(sorted(missing)) or 'none'}; "
          f"PostgreSQL clusters sampled per host: {clusters}")
    print(f"{'one collection round of the fleet':62}{'seconds':>9}{'ratio':>8}")
    print(f"{'bare: ssh host true, every host in parallel':62}{_med(bare):>9.3f}{1:>8.2f}")
    print(f"{'PoZoL: collect_fleet() (pooled, sample + parse + store)':62}{_med(collect):>9.3f}"
          f"{_med(collect) / _med(bare):>8.2f}")
    print(f"{'PoZoL: first round (connects to every host)':62}{first:>9.3f}"
          f"{first / _med(bare):>8.2f}")
    print(f"\ncollector threads: {settings.POZOL['TELEMETRY_THREADS']} "
          f"(POZOL_TELEMETRY_THREADS); connections it holds after {rounds + 2} rounds: "
          f"{held} for {len(hosts)} hosts")


def _bare_parallel(hosts: list[LightHost]) -> None:
    with ThreadPoolExecutor(len(hosts)) as pool:
        list(pool.map(_bare, hosts))


def _bare(host: LightHost) -> None:
    subprocess.run(["ssh", "-F", "/dev/null", "-i", str(host.key_path), "-p", str(host.port),
                    "-o", f"UserKnownHostsFile={host.known_hosts}", "-o", "BatchMode=yes",
                    f"{host.user}@{host.address}", "true"], check=True)


def _timed(work) -> float:
    started = time.monotonic()
    work()
    return time.monotonic() - started


def _med(values: list[float]) -> float:
    return statistics.median(values)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=24, help="lightweight hosts (24)")
    parser.add_argument("--rounds", type=int, default=10, help="timings of each kind")
    parser.add_argument("--subnet", default=os.environ.get("POZOL_BENCH_SUBNET", "127.0.84"),
                        help="loopback /24 for the hosts, from .101 on (127.0.84)")
    return parser.parse_args()


if __name__ == "__main__":
    main()
