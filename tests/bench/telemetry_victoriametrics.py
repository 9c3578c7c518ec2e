"""Telemetry kept in VictoriaMetrics at fleet scale: the collector's writes per round
and the storage per host, beside a bare POST and the PostgreSQL store.

    .venv/bin/python -m tests.bench.telemetry_victoriametrics [--hosts 1000 10000]
        [--rounds 3] [--storage-hosts 20] [--storage-days 2]

Not a test: it prints figures. In a database of its own with a random suffix, with
a real /usr/bin/victoria-metrics of its own (tests/telemetry/victoriametrics: a
free loopback port of 18428-18438, a temporary data directory, stopped by its PID).
For each size: one host from a replayed real discovery copied to N hosts
(tests/bench/seed.py), every host answering the OpenZFS 2.3 VM test host's
captured sample (moved a minute a round), then

- the collector: rounds of N answers recorded by services.record_all, the first
  after a restart and --rounds later ones, with POZOL_TELEMETRY_STORE=postgres and
  then =victoriametrics, in the same run; the latter twice, because the very first
  round also has VictoriaMetrics register every series it has never seen (once in
  a host's life, not at each restart of the collector): the second time is the
  restart's figure; of the latter, the one POST to
  VictoriaMetrics alone (the product's own timing of victoria.write_round, which runs
  beside the round's INSERT and UPDATE): the very first and the median of the rest; and the
  floor: the same payload POSTed bare by a fresh requests session (median of
  --rounds). Goal: the round within 10 % of TELEMETRY_INTERVAL.
- storage after those rounds: VictoriaMetrics' data directory (du, after a flush,
  before the second time)
  per host, beside telemetry_rawsample's total size per host (what the PostgreSQL
  store keeps of the same rounds before rollups);
- and at retention: --storage-hosts hosts given --storage-days of minute samples
  (values moving as tests/bench/telemetry_scale.py moves them, written by the
  product's writer from metrics.raw_series, which is what interval_values gives
  per sample), the data directory's growth per sample, and what that makes for a
  host at 48 hours, 30 days and 400 days of minute samples (VictoriaMetrics keeps
  every sample for its -retentionPeriod; the PostgreSQL store's 16.2 MiB keeps 48 h
  of minutes, then 5-minute and hourly rollups: README, "Telemetry upkeep").

No renice: run it under `nice`; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from datetime import UTC, datetime, timedelta

from tests.bench.database import database_of_its_own, unique_name
from tests.bench.fresh import server

MIB = 1024 * 1024


def main() -> None:
    args = _arguments()
    name = unique_name("pozol_tsdb_bench")
    with database_of_its_own(server(), name):
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django_settings")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        print(f"database {name}; {os.cpu_count()} CPUs; load average at start {_load()}",
              flush=True)
        for hosts in args.hosts:
            _size(hosts, args.rounds)
        _retention(args.storage_hosts, args.storage_days)


def _load() -> str:
    return ", ".join(f"{n:.1f}" for n in os.getloadavg())


def _store(kind: str, url: str = "") -> None:
    from django.conf import settings

    settings.POZOL = {**settings.POZOL, "TELEMETRY_STORE": kind, "VICTORIAMETRICS_URL": url,
                      "VICTORIAMETRICS_TIMEOUT": 120}


def _du(path) -> int:
    return int(subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True,
                              check=True).stdout.split()[0])


# -- one size ---------------------------------------------------------------------------

def _size(count: int, rounds: int) -> None:
    from django.conf import settings

    from tests.bench.telemetry_upkeep import _fleet
    from tests.telemetry.victoriametrics import VictoriaMetrics

    started = time.monotonic()
    hosts = _fleet(count)
    print(f"\n{count} hosts seeded in {time.monotonic() - started:.0f} s", flush=True)
    interval = settings.POZOL["TELEMETRY_INTERVAL"]
    _store("postgres")
    pg_first, pg_later, pg_bytes = _rounds(hosts, rounds)
    vm = VictoriaMetrics()
    vm.start()
    try:
        _store("victoriametrics", vm.url)
        posts, payloads = _timed_posts()
        met, _, _ = _rounds(hosts, rounds)  # VictoriaMetrics meets every series here
        vm.flush()
        vm_bytes = _du(vm.data)
        first, later, _ = _rounds(hosts, rounds)  # a restart again, the series known
        floor = _floor(vm.url, payloads[-1], rounds)
    finally:
        vm.remove()
        _store("postgres")
    post = statistics.median(posts[1:])
    lines = payloads[-1].count("\n")
    print(f"{count} hosts; load average {_load()}; a round's payload {len(payloads[-1]) / MIB:.1f}"
          f" MiB, {lines:,} samples ({lines / count:.0f} a host)")
    print(f"{'':44}{'ours':>9}{'floor':>9}{'x floor':>9}{'budget':>9}  goal")
    _line("round with VictoriaMetrics, its very first", met, None, interval * 0.1)
    _line("  its one POST, its very first", posts[0], None, interval * 0.1)
    _line("round with VictoriaMetrics, after a restart", first, None, interval * 0.1)
    _line("round with VictoriaMetrics, later (median)", later, None, interval * 0.1)
    _line("  its one POST, later (median)", post, floor, interval * 0.1)
    _line("round with PostgreSQL only, first", pg_first, None, interval * 0.1)
    _line("round with PostgreSQL only, later (median)", pg_later, None, interval * 0.1)
    done = rounds + 1
    print(f"storage after {done} rounds, KiB a host: VictoriaMetrics data directory "
          f"{vm_bytes / 1024 / count:.2f}; PostgreSQL raw rows {pg_bytes / 1024 / count:.2f} "
          f"(per round: {vm_bytes / 1024 / count / done:.2f} against "
          f"{pg_bytes / 1024 / count / done:.2f})", flush=True)


def _line(label: str, ours: float, floor: float | None, budget: float) -> None:
    against = (f"{floor:>8.2f}s{ours / floor:>9.1f}" if floor else f"{'':>9}{'':>9}")
    print(f"{label:<44}{ours:>8.2f}s{against}{budget:>8.1f}s  "
          f"{'met' if ours <= budget else 'MISSED'}", flush=True)


def _timed_posts() -> tuple[list[float], list[str]]:
    """The product's own write_round, timed and its payload kept (still sent)."""
    from apps.telemetry import victoria

    times, payloads = [], []
    real = victoria.write_round

    def timed(payload: str, hosts: int) -> bool:
        began = time.perf_counter()
        written = real(payload, hosts)
        times.append(time.perf_counter() - began)
        payloads.append(payload)
        if not written:
            raise SystemExit("VictoriaMetrics did not take a round: the figures would lie")
        return written
    victoria.write_round = timed
    return times, payloads


def _rounds(hosts: list, rounds: int) -> tuple[float, float, int]:
    """record_all of rounds+1 rounds (the first after a restart); telemetry_rawsample's
    size after them; the tables emptied before and after."""
    from django.db import connection

    from tests.bench.telemetry_upkeep import timed_rounds

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE telemetry_rawsample, telemetry_hosttelemetry")
    times, _, _ = timed_rounds(hosts, rounds)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE telemetry_rawsample")
        cursor.execute("SELECT pg_total_relation_size('telemetry_rawsample')")
        size = cursor.fetchone()[0]
        cursor.execute("TRUNCATE telemetry_rawsample, telemetry_hosttelemetry")
    return times[0], statistics.median(times[1:]), size


def _floor(url: str, payload: str, rounds: int) -> float:
    """The same bytes POSTed bare (a warmed connection, as the product's), median."""
    import requests

    body = payload.encode()
    session = requests.Session()
    session.get(f"{url}/health", timeout=10).raise_for_status()
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        session.post(f"{url}/api/v1/import/prometheus", data=body, timeout=120
                     ).raise_for_status()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


# -- at retention -----------------------------------------------------------------------

def _retention(count: int, days: int) -> None:
    import requests

    from apps.telemetry.core import metrics, vmformat
    from tests.bench.telemetry_upkeep import _minutes
    from tests.telemetry.victoriametrics import VictoriaMetrics

    minutes = days * 24 * 60
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    rows = _minutes(end - timedelta(minutes=minutes), minutes)
    interval = timedelta(minutes=1)
    points: dict[datetime, list] = {}
    for metric in metrics.METRICS.values():
        for found in metrics.raw_series(metric, rows, interval):
            for at, value in found.points:
                if value is not None:
                    points.setdefault(at, []).append((metric.name, found.key, value))
    vm = VictoriaMetrics()
    vm.start()
    try:
        empty = _du(vm.data)
        samples = 0
        for host in range(1, count + 1):
            text = "".join(vmformat.lines(host, at, values) for at, values in points.items())
            samples += text.count("\n")
            requests.post(f"{vm.url}/api/v1/import/prometheus", data=text.encode(),
                          timeout=300).raise_for_status()
        vm.flush()
        vm.stop()  # a stopped VictoriaMetrics has merged and written what it holds
        used = _du(vm.data) - empty
    finally:
        vm.remove()
    per_sample = used / samples
    per_host_minute = samples / count / minutes
    print(f"\nat retention: {count} hosts x {days} days of minute samples "
          f"({per_host_minute:.0f} series a host), {samples:,} samples, {used / MIB:.1f} MiB: "
          f"{per_sample:.2f} bytes a sample; load average {_load()}")
    for label, span in (("48 hours", 2), ("30 days", 30), ("400 days", 400)):
        mib = per_sample * per_host_minute * span * 24 * 60 / MIB
        print(f"  a host at {label} of minute samples: {mib:.1f} MiB"
              + ("  (the PostgreSQL store at its default retention: 16.2 MiB)"
                 if span == 400 else ""), flush=True)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 10000],
                        help="fleet sizes, one after the other (1000 10000)")
    parser.add_argument("--rounds", type=int, default=3, help="later collector rounds (3)")
    parser.add_argument("--storage-hosts", type=int, default=20,
                        help="hosts given --storage-days of minute samples (20)")
    parser.add_argument("--storage-days", type=int, default=2,
                        help="days of minute samples each (2)")
    return parser.parse_args()


if __name__ == "__main__":
    main()
