"""/metrics at fleet scale: the whole scrape, one shard of 4 and of 8, and two floors,
at 1,000 and 10,000 hosts (--sizes) in one run.

    .venv/bin/python -m tests.bench.metrics_scale [--sizes 1000,10000] [--requests 10]
        [--profile]

Not a test: it prints figures. In a database of its own (pozol_metrics_bench_<random>
on the suite's PostgreSQL, dropped at the end) it records one host from a replayed
real discovery and copies it (tests/bench/seed.py: its pools, datasets, clusters,
disks), gives every host its telemetry as the collector leaves it (seed.telemetry:
the two newest raw samples, the OpenZFS 2.3 VM test host's captured sample
(tests/telemetry/fixtures/openzfs-2.3) a minute apart with its counters grown,
the state row with the last sample, the current values and the last hour for
sparklines), 10 snapshots, and one replication link per 10 hosts
(seed.snapshots, seed.links). The fleet grows to each size in turn.

Each request runs --requests times after two warm-ups through Django's test client
in this process (the server's whole handling), with the scrape token. The floors:
"SQL floor" re-runs the very queries one whole scrape made and fetches their rows
(the database's and driver's share, no Python on the rows); "render floor" is
prometheus_client's generate_latest over families holding the same samples, built
beforehand (the cost of the text exposition alone, as the library makes it);
"write floor" is /metrics' own writer over the same gauge samples built beforehand
(the histogram's few series left out).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from datetime import datetime

from tests.bench.database import django_on_its_own, unique_name
from tests.bench.fresh import server
from tests.bench.telemetry_scale import METRICS_TOKEN, _setup

DATABASE = os.environ.get("POZOL_BENCH_DATABASE", unique_name("pozol_metrics_bench"))
SNAPSHOTS_PER_HOST = 10
HOSTS_PER_LINK = 10
GOAL_MS = 2000.0


def main() -> None:
    args = _arguments()
    os.environ["POZOL_METRICS_TOKEN"] = METRICS_TOKEN
    with django_on_its_own(server(), DATABASE):
        _run(args)


def _run(args: argparse.Namespace) -> None:
    from django.db import connection

    clients, template = _setup()
    scrape = clients["scrape"]
    hosts = [template]
    load = ", ".join(f"{n:.1f}" for n in os.getloadavg())
    print(f"{os.cpu_count()} CPUs, load average {load} at the start; Django test client "
          f"in-process; {args.requests} requests each after two warm-ups")
    print(f"{'hosts':>6} {'request':<22}{'p50 ms':>9}{'p95 ms':>9}{'bytes':>11}{'series':>9}"
          "  goal")
    for size in args.sizes:
        started = time.monotonic()
        hosts += _grow(template, hosts, size)
        with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum would
            cursor.execute("VACUUM ANALYZE")
        seeded = time.monotonic() - started
        whole = _measure(lambda: scrape.get("/metrics"), args.requests)
        rows = [("whole /metrics", whole)]
        for shards in (4, 8):
            rows.append((f"shard 0 of {shards}", _measure(
                lambda n=shards: scrape.get(f"/metrics?shard=0&shards={n}"), args.requests)))
        rows.append(("SQL floor", _sql_floor(scrape, args.requests)))
        rows.append(("render floor", _render_floor(whole.body, args.requests)))
        rows.append(("write floor", _write_floor(whole.body, args.requests)))
        for label, f in rows:
            goal = ""
            if label == "whole /metrics":
                goal = f"p95 <= {GOAL_MS:.0f} ms: {'met' if f.p95 <= GOAL_MS else 'MISSED'}"
            print(f"{size:>6} {label:<22}{f.p50:>9.1f}{f.p95:>9.1f}{f.bytes:>11,}"
                  f"{f.series:>9,}  {goal}", flush=True)
        print(f"       (seeded in {seeded:.0f} s; load average "
              f"{', '.join(f'{n:.1f}' for n in os.getloadavg())})", flush=True)
        if args.profile:
            _profile(lambda: scrape.get("/metrics"))


class Figures:
    def __init__(self, times: list[float], body: bytes) -> None:
        cuts = statistics.quantiles(times, n=20, method="inclusive")
        self.p50, self.p95 = statistics.median(times), cuts[18]
        self.body = body
        self.bytes = len(body)
        self.series = sum(1 for line in body.splitlines() if line and line[:1] != b"#")


def _measure(fetch: Callable, requests: int) -> Figures:
    for _ in range(2):
        response = fetch()
        assert response.status_code == 200, (response.status_code, response.content[:300])
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        response = fetch()
        times.append((time.perf_counter() - started) * 1000)
    return Figures(times, response.content)


def _sql_floor(scrape, requests: int) -> Figures:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        scrape.get("/metrics")
    queries = [q["sql"] for q in captured.captured_queries
               if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    times = []
    for index in range(requests + 2):
        started = time.perf_counter()
        with connection.cursor() as cursor:
            raw = cursor.cursor  # psycopg's own: the logged SQL has its values inline
            for sql in queries:
                raw.execute(sql)
                if raw.description is not None:
                    raw.fetchall()
        if index >= 2:
            times.append((time.perf_counter() - started) * 1000)
    return Figures(times, b"")


def _render_floor(body: bytes, requests: int) -> Figures:
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    families = list(text_string_to_metric_families(body.decode()))

    class Prebuilt:
        def collect(self):
            return families

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Prebuilt())
    times, text = [], b""
    for index in range(requests + 2):
        started = time.perf_counter()
        text = generate_latest(registry)
        if index >= 2:
            times.append((time.perf_counter() - started) * 1000)
    return Figures(times, text)


def _write_floor(body: bytes, requests: int) -> Figures:
    """/metrics' own writer (apps.telemetry.prometheus.Gauge) over the same samples,
    built beforehand: what writing costs apart from reading and building."""
    from prometheus_client.parser import text_string_to_metric_families

    from apps.telemetry.prometheus import Gauge

    gauges = []
    for family in text_string_to_metric_families(body.decode()):
        if family.type != "gauge":
            continue
        labels = tuple(family.samples[0].labels) if family.samples else ()
        gauge = Gauge(family.name, family.documentation, labels)
        for sample in family.samples:
            gauge.add_metric([sample.labels[key] for key in labels], sample.value)
        gauges.append(gauge)
    times, text = [], b""
    for index in range(requests + 2):
        started = time.perf_counter()
        escaped: dict[str, str] = {}
        text = "".join([line for gauge in gauges for line in gauge.lines(escaped)]).encode()
        if index >= 2:
            times.append((time.perf_counter() - started) * 1000)
    return Figures(times, text)


def _profile(fetch: Callable) -> None:
    import cProfile
    import pstats

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    profiler = cProfile.Profile()
    with CaptureQueriesContext(connection) as captured:
        profiler.runcall(fetch)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
    for query in captured.captured_queries:  # execute and fetch, as Django times them
        print(f"{float(query['time']) * 1000:8.1f} ms  {' '.join(query['sql'].split())[:150]}")


# -- the fleet ----------------------------------------------------------------------------

def _grow(template, hosts: list, size: int) -> list:
    from tests.bench import seed

    new = seed.clone_hosts(template, size - len(hosts), prefix=f"s{size}-")
    now = datetime.now().astimezone().replace(microsecond=0)
    # the template gets its samples with the first size
    fresh = new if len(hosts) > 1 else [*hosts, *new]
    seed.telemetry(fresh, now)
    seed.snapshots(fresh, now, SNAPSHOTS_PER_HOST)
    seed.links(fresh, now, HOSTS_PER_LINK)
    return new


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=lambda text: [int(n) for n in text.split(",")],
                        default=[1000, 10000], help="fleet sizes, growing (1000,10000)")
    parser.add_argument("--requests", type=int, default=10, help="timed requests each (10)")
    parser.add_argument("--profile", action="store_true",
                        help="print where one whole scrape spends its time, per size")
    return parser.parse_args()


if __name__ == "__main__":
    main()
