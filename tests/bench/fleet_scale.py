"""How the pages hold a fleet: server time and bytes at 2, 200 and 1,000 hosts.

    .venv/bin/python -m tests.bench.fleet_scale [--sizes 2,200,1000] [--requests 30]
        [--log-lines 8] [--line-bytes 650]

Not a test: it prints figures. In a database of its own (pozol_scalebench on
the suite's PostgreSQL, dropped at the end) it records one host from a
replayed real zfs-fuse discovery, then grows the fleet with copies of it
(facts, pools, datasets, clusters with their pg_settings rows, disks, an open
and a resolved alert) and a day of operations per host (a discovery every 15
minutes: 96), each with --log-lines lines of about --line-bytes bytes (8 x 650
is about 0.5 GB a day at 1,000 hosts, what discovery's logs really weigh).

Each page is requested --requests times, after two warm-up requests, through
Django's test Client in this process (no network, no gunicorn): the time is
the server's whole handling of the request (middleware, queries, rendering),
signed in as an operator or with an API token as the pages require.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from tests.bench.database import database_of_its_own

DATABASE = "pozol_scalebench"
PER_HOST_PER_DAY = 96  # scheduled discovery every 15 minutes


@dataclass
class Figures:
    p50_ms: float
    p95_ms: float
    bytes: int
    queries: int


def main() -> None:
    args = _arguments()
    with database_of_its_own(_server(), DATABASE):
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django_settings")
        import django

        django.setup()
        _run(args)


def _run(args: argparse.Namespace) -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    clients, template = _setup()
    results: dict[int, dict[str, Figures]] = {}
    for size in args.sizes:
        started = time.monotonic()
        _grow_to(template, size, args)
        print(f"seeded {size} hosts in {time.monotonic() - started:.1f}s; measuring", flush=True)
        results[size] = {name: _measure(fetch, args.requests)
                         for name, fetch in _pages(clients, template).items()}
    _print(results, args)


def _setup():
    from django.contrib.auth.models import User
    from django.test import Client
    from rest_framework.test import APIClient

    from apps.accounts.models import ApiToken
    from apps.fleet.models import Host
    from apps.fleet.steps import record_facts
    from apps.remote.gather import discover
    from tests.remote.fixtures.hosts import replay_transcript

    operator = User.objects.create_user("operator", is_staff=True)
    ui = Client(HTTP_HOST="localhost")
    ui.force_login(operator)
    _, raw = ApiToken.objects.issue(operator, "bench")
    api = APIClient(HTTP_HOST="localhost")
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")

    template = Host(name="db1", address="127.0.0.9", credential_kind="pasted",
                    host_key_state=Host.KeyState.PINNED)
    template.set_private_key("unused")
    template.save()
    record_facts(template, discover(replay_transcript()).to_dict())
    return (ui, api), template


def _grow_to(template, size: int, args: argparse.Namespace) -> None:
    from django.db import connection

    from apps.fleet.models import Host
    from apps.ops.models import Operation
    from tests.bench import seed

    have = Host.objects.count()
    new = [template] if not Operation.objects.exists() else []
    new += seed.clone_hosts(template, size - have, prefix=f"n{size}-") if size > have else []
    last_operation = Operation.objects.order_by("-pk").values_list("pk", flat=True).first()
    seed.raise_alerts(new)
    seed.follow_profiles(new)
    seed.start_work(new[::10])  # something runs on every tenth host
    seed.seed_operations(new, PER_HOST_PER_DAY)
    seed.seed_log_lines(args.log_lines, args.line_bytes, after_id=last_operation or 0)
    with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum would
        cursor.execute("ANALYZE")


def _pages(clients, template) -> dict[str, Callable]:
    ui, api = clients
    return {
        "overview /": lambda: ui.get("/"),
        "host page": lambda: ui.get(f"/hosts/{template.pk}/"),
        "host tuning tab": lambda: ui.get(f"/hosts/{template.pk}/tuning/"),
        "host ops tab": lambda: ui.get(f"/hosts/{template.pk}/operations/"),
        "/api/hosts/": lambda: api.get("/api/hosts/"),
        "/operations/": lambda: ui.get("/operations/"),
        "/api/operations/": lambda: api.get("/api/operations/"),
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


def _print(results: dict[int, dict[str, Figures]], args: argparse.Namespace) -> None:
    from apps.ops.models import LogLine, Operation

    sizes = list(results)
    print(f"\n{args.requests} requests per page, Django test Client in-process; "
          f"{Operation.objects.count()} operations, {LogLine.objects.count()} log lines "
          f"at {sizes[-1]} hosts")
    print(f"{'':<17}" + "".join(f" | {f'{n} hosts':^34}" for n in sizes))
    print(f"{'page':<17}" + f" | {'p50 ms':>8} {'p95 ms':>8} {'bytes':>10} {'qs':>5}" * len(sizes))
    for page in results[sizes[0]]:
        cells = (results[size][page] for size in sizes)
        print(f"{page:<17}" + "".join(
            f" | {f.p50_ms:>8.1f} {f.p95_ms:>8.1f} {f.bytes:>10} {f.queries:>5}" for f in cells))


def _server() -> str:
    from apps.demo.services import postgres_url

    return postgres_url().rsplit("/", 1)[0]


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=lambda text: [int(n) for n in text.split(",")],
                        default=[2, 200, 1000], help="fleet sizes, growing (2,200,1000)")
    parser.add_argument("--requests", type=int, default=30, help="requests per page and size")
    parser.add_argument("--log-lines", type=int, default=8, help="log lines per operation")
    parser.add_argument("--line-bytes", type=int, default=650, help="bytes per log line")
    return parser.parse_args()


if __name__ == "__main__":
    main()
