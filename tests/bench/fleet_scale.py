"""How the pages hold a fleet: server time, queries and bytes at 1,000, 5,000 and
10,000 hosts, in one run.

    .venv/bin/python -m tests.bench.fleet_scale [--sizes 1000,5000,10000] [--requests 30]
        [--days 365] [--per-day 1] [--log-lines 8] [--line-bytes 650]
        [--database NAME [--keep] [--reuse]]

Not a test: it prints figures. In a database of its own (pozol_fleet_bench_<random>
on the suite's PostgreSQL, or --database; dropped at the end unless --keep) it
records one host from a replayed real zfs-fuse discovery, then grows the fleet to
each size in turn with copies of it (tests/bench/seed.py: facts, pools, datasets,
clusters with their pg_settings rows, disks, an open and a resolved alert, a
tuning profile and findings, an operation running on every tenth host) and what a
fleet has around its hosts:

- telemetry as the collector leaves it: the two newest raw samples (the
  OpenZFS 2.3 VM test host's captured sample), the state row with the
  current values the overview sorts by and the last hour the sparklines draw
  (every host has sparklines);
- 10 snapshots per host, a replication link from every tenth host, two clones on
  every tenth host;
- --days of history at --per-day finished operations a day per host (a year at
  one a day: 3.65 million operations at 10,000 hosts), written by SQL, with
  --log-lines lines of about --line-bytes bytes for each operation of the newest
  day (the lists never read log lines; they are there as the table's weight).

--keep leaves the database (its name is printed); --reuse --database NAME measures
a kept one again at the size it holds, without seeding (minutes saved at 10,000).

Each page is requested --requests times, after two warm-up requests, through
Django's test Client in this process (no network, no gunicorn): the time is the
server's whole handling of the request (middleware, queries, rendering), signed
in as an operator or with an API token as the pages require. The load average is
printed beside each size: the figures mean little on a busy machine.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tests.bench.database import django_on_its_own, unique_name
from tests.bench.fresh import server

GOAL_MS = 100.0


@dataclass
class Figures:
    p50_ms: float
    p95_ms: float
    bytes: int
    queries: int


def main() -> None:
    args = _arguments()
    # Stopped by its PID, it still drops its database (a SystemExit runs the finally).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    name = args.database or unique_name("pozol_fleet_bench")
    print(f"database {name}; {os.cpu_count()} CPUs; load average {_load()}", flush=True)
    with django_on_its_own(server(), name, create=not args.reuse, drop=not args.keep):
        _run(args)
    if args.keep:
        print(f"kept database {name}: --reuse --database {name} measures it again")


def _run(args: argparse.Namespace) -> None:
    from apps.fleet.models import Host

    clients, template = _setup()
    results: dict[int, dict[str, Figures]] = {}
    loads: dict[int, str] = {}
    sizes = [Host.objects.count()] if args.reuse else args.sizes
    for size in sizes:
        if not args.reuse:
            started = time.monotonic()
            _grow_to(template, size, args)
            print(f"seeded {size} hosts in {time.monotonic() - started:.0f} s; measuring "
                  f"(load average {_load()})", flush=True)
        results[size] = {}
        for name, fetch in _pages(clients, template, size).items():
            results[size][name] = _measure(fetch, args.requests)
            print(f"  {size} {name:<28} p95 {results[size][name].p95_ms:7.1f} ms", flush=True)
        loads[size] = _load()
    _print(results, loads, args)


def _setup():
    from django.contrib.auth.models import User
    from django.test import Client
    from rest_framework.test import APIClient

    from apps.accounts.models import ApiToken
    from apps.fleet.models import Host
    from apps.fleet.steps import record_facts
    from apps.remote.gather import discover
    from tests.remote.fixtures.hosts import replay_transcript

    operator = User.objects.filter(username="operator").first()
    operator = operator or User.objects.create_user("operator", is_staff=True)
    ui = Client(HTTP_HOST="localhost")
    ui.force_login(operator)
    _, raw = ApiToken.objects.issue(operator, "bench")
    api = APIClient(HTTP_HOST="localhost")
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")

    template = Host.objects.filter(name="db1").first()
    if template is None:
        template = Host(name="db1", address="127.0.0.9", credential_kind="pasted",
                        host_key_state=Host.KeyState.PINNED, reachable=True)
        template.set_private_key("unused")
        template.save()
        record_facts(template, discover(replay_transcript()).to_dict())
    return (ui, api), template


def _grow_to(template, size: int, args: argparse.Namespace) -> None:
    from django.db import connection

    from apps.fleet.models import Host
    from apps.ops.models import Operation
    from tests.bench import seed

    hosts = list(Host.objects.order_by("pk"))
    first = len(hosts) == 1 and not Operation.objects.exists()
    last_host = 0 if first else hosts[-1].pk
    last_operation = Operation.objects.order_by("-pk").values_list("pk", flat=True).first()
    new = [template] if first else []
    new += seed.clone_hosts(template, size - len(hosts), prefix=f"n{size}-")
    now = datetime.now().astimezone().replace(microsecond=0)
    seed.raise_alerts(new)
    seed.follow_profiles(new)
    seed.telemetry(new, now)
    seed.snapshots(new, now)
    seed.links(new, now)
    seed.clones(new)
    seed.history(last_host, args.days, args.per_day, now)
    seed.start_work(new[::10])  # something runs on every tenth host
    with connection.cursor() as cursor:  # the newest day's operations carry log lines
        cursor.execute("SELECT coalesce(min(id), 0) - 1 FROM ops_operation "
                       "WHERE id > %s AND created_at > %s",
                       [last_operation or 0, now - timedelta(days=1)])
        newest_day = cursor.fetchone()[0]
    seed.seed_log_lines(args.log_lines, args.line_bytes, after_id=max(newest_day, 0))
    with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum would
        cursor.execute("VACUUM ANALYZE")


def _pages(clients, template, size: int) -> dict[str, Callable]:
    from apps.fleet.views import PER_PAGE

    ui, api = clients
    last = -(-size // PER_PAGE)
    host = template.pk
    return {
        "overview /": lambda: ui.get("/"),
        "overview ?sort=arc": lambda: ui.get("/?sort=arc"),
        "overview ?sort=capacity": lambda: ui.get("/?sort=capacity"),
        "overview ?sort=tps": lambda: ui.get("/?sort=tps"),
        "overview ?sort=lag": lambda: ui.get("/?sort=replication_lag"),
        "overview last page": lambda: ui.get(f"/?page={last}"),
        "overview ?q=n1": lambda: ui.get("/?q=n1"),
        "host page": lambda: ui.get(f"/hosts/{host}/"),
        "host tuning tab": lambda: ui.get(f"/hosts/{host}/tuning/"),
        "host ops tab": lambda: ui.get(f"/hosts/{host}/operations/"),
        "host snapshots tab": lambda: ui.get(f"/hosts/{host}/snapshots/"),
        "host metrics tab": lambda: ui.get(f"/hosts/{host}/metrics/"),
        "/operations/": lambda: ui.get("/operations/"),
        "/operations/?host=": lambda: ui.get(f"/operations/?host={host}"),
        "/operations/?page=100": lambda: ui.get("/operations/?page=100"),
        "/api/hosts/": lambda: api.get("/api/hosts/"),
        "/api/operations/": lambda: api.get("/api/operations/"),
        "/api/operations/?cursor=": lambda: api.get("/api/operations/?cursor="),
        "/api/snapshots/": lambda: api.get("/api/snapshots/"),
        "/api/clones/": lambda: api.get("/api/clones/"),
        "/api/replication-links/": lambda: api.get("/api/replication-links/"),
        "/api/alerts/": lambda: api.get("/api/alerts/"),
    }


def _measure(fetch: Callable, requests: int) -> Figures:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        response = fetch()
    assert response.status_code == 200, (response.status_code, response.content[:300])
    queries = len(captured)  # now: the next request clears the connection's log
    fetch()
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        response = fetch()
        times.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(times, n=20, method="inclusive")
    return Figures(p50_ms=statistics.median(times), p95_ms=cuts[18],
                   bytes=len(response.content), queries=queries)


def _print(results: dict[int, dict[str, Figures]], loads: dict[int, str],
           args: argparse.Namespace) -> None:
    from apps.ops.models import LogLine, Operation

    sizes = list(results)
    print(f"\n{args.requests} requests per page, Django test Client in-process; "
          f"{Operation.objects.count():,} operations, {LogLine.objects.count():,} log lines "
          f"at {sizes[-1]} hosts; goal p95 <= {GOAL_MS:.0f} ms")
    print(f"{'':<26}" + "".join(f" | {f'{n} hosts (load {loads[n]})':^40}" for n in sizes))
    print(f"{'page':<26}" + f" | {'p50 ms':>8} {'p95 ms':>8} {'bytes':>10} {'qs':>4}  "
          * len(sizes))
    for page in results[sizes[0]]:
        cells = (results[size][page] for size in sizes)
        print(f"{page:<26}" + "".join(
            f" | {f.p50_ms:>8.1f} {f.p95_ms:>8.1f} {f.bytes:>10} {f.queries:>4}"
            f"{'' if f.p95_ms <= GOAL_MS else ' !'}" .ljust(37) for f in cells))


def _load() -> str:
    return ", ".join(f"{n:.1f}" for n in os.getloadavg())


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=lambda text: [int(n) for n in text.split(",")],
                        default=[1000, 5000, 10000], help="fleet sizes, growing")
    parser.add_argument("--requests", type=int, default=30, help="requests per page and size")
    parser.add_argument("--days", type=int, default=365, help="days of operations (365)")
    parser.add_argument("--per-day", type=int, default=1, help="operations a day per host")
    parser.add_argument("--log-lines", type=int, default=8, help="log lines per operation")
    parser.add_argument("--line-bytes", type=int, default=650, help="bytes per log line")
    parser.add_argument("--database", default="", help="a database name (default: unique)")
    parser.add_argument("--keep", action="store_true", help="leave the database at the end")
    parser.add_argument("--reuse", action="store_true",
                        help="measure --database as it is, without seeding")
    args = parser.parse_args()
    if args.reuse and not args.database:
        parser.error("--reuse needs --database")
    return args


if __name__ == "__main__":
    main()
