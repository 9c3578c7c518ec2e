"""Telemetry storage at fleet scale: 200 hosts with 7 days of 1-minute samples, then
the pages and series reads timed.

    .venv/bin/python -m tests.bench.telemetry_scale [--hosts 200] [--days 7]
        [--requests 30] [--url 'LABEL=/path/{host}/...'] [--rows]

Not a test: it prints figures. In a database of its own (pozol_prom_bench_<random> on the
suite's PostgreSQL, dropped at the end) it records one host from a replayed real
discovery, copies it to --hosts hosts (tests/bench/seed.py), and gives each host
--days of samples a minute apart, stored as the product stores them: raw rows
for the last TELEMETRY_RAW_HOURS (48 h), 5-minute rollups for the whole span
(the beat task rolls raw rows up as they settle, and keeps 5-minute ones 30 days)
and hourly ones merged from those, packed (apps.telemetry.core.packing), and as
the tick compacts them: closed hours of 5-minute buckets and of raw samples (an
hour behind) and closed days of hourly buckets in chunks, the rest rows
(--rows: everything rows, as before chunks). The rows are the OpenZFS 2.3 VM test
host's captured sample (tests/telemetry/fixtures/openzfs-2.3) with its
counters growing and its gauges moving each minute; the rollups are made by the
product's own code (apps.telemetry.core.packing roll_up and merge) for one host and written
for every host with COPY.

Each URL is requested --requests times after two warm-ups, through Django's test
client in this process (the server's whole handling: middleware, queries,
rendering), signed in as an operator, with an API token for the API, with the
scrape token for /metrics. The list of URLs is URLS below (a `{host}` is the
first host's id, `{from24}`/`{from7d}`/`{to}` the windows); --url adds more.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tests.bench.database import database_of_its_own
from tests.bench.fresh import server

# A name of its own per run (two runs on one machine never drop each other's).
DATABASE = os.environ.get("POZOL_BENCH_DATABASE", f"pozol_prom_bench_{secrets.token_hex(4)}")
METRICS_TOKEN = "bench-scrape-token"
GOALS = {"fleet page /": 100.0, "API 7 d arc_hit_rate": 300.0, "API 7 d tps": 300.0,
         "API 7 d arc_size": 300.0}
# (label, client, path): "ui" signed in, "api" an API token, "scrape" the scrape token.
URLS = [
    ("fleet page /", "ui", "/"),
    ("host page", "ui", "/hosts/{host}/"),
    ("API 24 h arc_hit_rate", "api", "/api/hosts/{host}/telemetry/?metric=arc_hit_rate"
     "&from={from24}&to={to}"),
    ("API 24 h tps", "api", "/api/hosts/{host}/telemetry/?metric=tps&from={from24}&to={to}"),
    ("API 24 h arc_size", "api", "/api/hosts/{host}/telemetry/?metric=arc_size"
     "&from={from24}&to={to}"),
    ("API 7 d arc_hit_rate", "api", "/api/hosts/{host}/telemetry/?metric=arc_hit_rate"
     "&from={from7d}&to={to}"),
    ("API 7 d tps", "api", "/api/hosts/{host}/telemetry/?metric=tps&from={from7d}&to={to}"),
    ("API 7 d arc_size", "api", "/api/hosts/{host}/telemetry/?metric=arc_size"
     "&from={from7d}&to={to}"),
    ("/metrics", "scrape", "/metrics"),
]


@dataclass
class Figures:
    p50_ms: float
    p95_ms: float
    bytes: int
    queries: int
    sql_ms: float  # p50 of the time in SQL (execute and fetch), from this process
    cpu_ms: float  # p50 of this process's CPU time: Python's own share of the request


def main() -> None:
    args = _arguments()
    os.environ["POZOL_METRICS_TOKEN"] = METRICS_TOKEN
    with database_of_its_own(server(), DATABASE):
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django_settings")
        import django

        django.setup()
        _run(args)


def _run(args: argparse.Namespace) -> None:
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    clients, template = _setup()
    started = time.monotonic()
    hosts = _fleet(template, args.hosts)
    now = _minute(datetime.now().astimezone())
    counts = _fill(hosts, now, args.days, chunks=not args.rows)
    with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum would
        cursor.execute("VACUUM ANALYZE")
    print(f"seeded {args.hosts} hosts x {args.days} days in {time.monotonic() - started:.0f} s:"
          f" {counts['raw']:,} raw rows, {counts['5m']:,} 5-minute and {counts['1h']:,} "
          "hourly rollups", flush=True)
    windows = {"host": template.pk, "to": _q(now), "from24": _q(now - timedelta(hours=24)),
               "from7d": _q(now - timedelta(days=args.days))}
    results = {label: _measure(_fetch(clients, who, path.format(**windows)), args.requests)
               for label, who, path in [*URLS, *args.url]}
    _print(results, args)
    for label, who, path in [*URLS, *args.url]:
        if label in args.profile:
            _profile(label, _fetch(clients, who, path.format(**windows)))


# -- the fleet --------------------------------------------------------------------------

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
    scrape = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}")

    template = Host(name="db1", address="127.0.0.9", credential_kind="pasted",
                    host_key_state=Host.KeyState.PINNED, reachable=True)
    template.set_private_key("unused")
    template.save()
    record_facts(template, discover(replay_transcript()).to_dict())
    return {"ui": ui, "api": api, "scrape": scrape}, template


def _fleet(template, count: int) -> list:
    from tests.bench import seed

    return [template, *seed.clone_hosts(template, count - 1)]


# -- samples, as the product stores them ------------------------------------------------

def _fill(hosts: list, now: datetime, days: int, *, chunks: bool) -> dict[str, int]:
    """One host's rows made by the product's code, written for every host by COPY."""
    from django.conf import settings

    from apps.telemetry import store
    from apps.telemetry.core import packing
    from apps.telemetry.core.rollup import FIVE_MINUTES, HOUR

    minutes = days * 24 * 60
    raw_minutes = settings.POZOL["TELEMETRY_RAW_HOURS"] * 60
    base, last_sample = _base_sample()
    start = now - timedelta(minutes=minutes)
    rows = [(start + timedelta(minutes=m, seconds=30), _moved(base, m)) for m in range(minutes)]
    five = packing.roll_up(rows, FIVE_MINUTES)
    hourly = packing.merge(five, HOUR)
    raw_text = [(at, json.dumps(values)) for at, values in rows[-raw_minutes:]]
    ids = store.layout_ids(b.layout for b in (*five, *hourly))
    five_text = [(b.start, ids[b.layout], packing.pack(b)) for b in five]
    hourly_text = [(b.start, ids[b.layout], packing.pack(b)) for b in hourly]
    last_sample = {**last_sample, "taken_at": rows[-1][0].isoformat()}
    counts = {"raw": len(raw_text) * len(hosts), "5m": len(five_text) * len(hosts),
              "1h": len(hourly_text) * len(hosts)}
    if chunks:
        raw_text, five_text, hourly_text = _chunked(hosts, rows[-raw_minutes:], five, hourly,
                                                    rows[-1][0])
    _copy(hosts, raw_text, five_text, hourly_text)
    _states(hosts, last_sample, rows[-1][0], five[-1].start + FIVE_MINUTES,
            hourly[-1].start + HOUR)
    return counts


def _chunked(hosts: list, raw: list, five: list, hourly: list, last: datetime):
    """What the tick leaves as chunks (written here for every host), and the rows it
    leaves as rows (returned, as _copy writes them)."""
    from django.db import transaction

    from apps.telemetry import store, upkeep
    from apps.telemetry.core import packing, rawpack, rollup
    from apps.telemetry.core.rollup import HOUR

    hour, day = rollup.bucket_start(last, HOUR), rollup.bucket_start(last, upkeep.DAY)
    raw_open = hour - upkeep.RAW_LAG  # raw hours before this are chunks

    def spans(items, width, at):
        found: dict = {}
        for item in items:
            found.setdefault(rollup.bucket_start(at(item), width), []).append(item)
        return found

    written = []
    for start, part in spans([r for r in raw if r[0] < raw_open], HOUR, lambda r: r[0]).items():
        written.append((None, start, *rawpack.pack_samples(start, [(at, v, {})
                                                                   for at, v in part])))
    for resolution, buckets, width, until in (("5m", five, HOUR, hour),
                                              ("1h", hourly, upkeep.DAY, day)):
        closed = [b for b in buckets if b.start < until]
        for start, part in spans(closed, width, lambda b: b.start).items():
            written.append((resolution, start, *packing.pack_chunk(start, part)))
    with transaction.atomic():
        for resolution, start, layout, data in written:
            rows = [(h.pk, start, layout, data) for h in hosts]
            if resolution is None:
                store.save_raw_chunks(rows)
            else:
                store.save_chunks(resolution, rows)
    ids = store.layout_ids(b.layout for b in (*five, *hourly))
    return ([(at, json.dumps(values)) for at, values in raw if at >= raw_open],
            [(b.start, ids[b.layout], packing.pack(b)) for b in five if b.start >= hour],
            [(b.start, ids[b.layout], packing.pack(b)) for b in hourly if b.start >= day])


def _base_sample() -> tuple[dict, dict]:
    """The OpenZFS 2.3 VM test host's second captured sample: its stored row and its
    whole form (the state row's last sample)."""
    from apps.telemetry.core import series
    from tests.telemetry.fixtures import openzfs_samples

    sample = openzfs_samples("2.3")[1]
    return series.stored(sample), sample.to_dict()


def _moved(values: dict, minute: int) -> dict:
    """The base row `minute` minutes later: counters grown, gauges moved a little."""
    from apps.telemetry.core import series

    wave = 1 + 0.1 * math.sin(minute / 37)
    moved = {}
    for key, value in values.items():
        if isinstance(value, dict):
            moved[key] = _moved(value, minute)
        elif series.is_counter((key,)):
            moved[key] = value + minute * (100 + minute % 7)
        elif key == "uptime":
            moved[key] = value + minute * 60
        elif isinstance(value, int):
            moved[key] = int(value * wave)
        else:
            moved[key] = value * wave
    return moved


def _copy(hosts: list, raw: list, five: list, hourly: list) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        copy = cursor.connection.cursor()
        with copy.copy("COPY telemetry_rawsample (host_id, taken_at, \"values\", missing) "
                       "FROM STDIN") as out:
            for host in hosts:
                for at, text in raw:
                    out.write_row((host.pk, at, text, "{}"))
        with copy.copy("COPY telemetry_rollup (host_id, resolution, start, layout_id, data) "
                       "FROM STDIN") as out:
            for resolution, rows in (("5m", five), ("1h", hourly)):
                for host in hosts:
                    for at, layout, data in rows:
                        out.write_row((host.pk, resolution, at, layout, data))


def _states(hosts: list, last_sample: dict, last_at: datetime, five_to: datetime,
            hourly_to: datetime) -> None:
    from apps.telemetry.models import HostTelemetry, RollupMark

    HostTelemetry.objects.bulk_create(
        [HostTelemetry(host=host, last_sample=last_sample, last_sample_at=last_at,
                       last_duration=0.2) for host in hosts], batch_size=500)
    RollupMark.objects.update_or_create(resolution="5m", defaults={"rolled_to": five_to})
    RollupMark.objects.update_or_create(resolution="1h", defaults={"rolled_to": hourly_to})


# -- measuring ----------------------------------------------------------------------------

def _fetch(clients: dict, who: str, path: str) -> Callable:
    client = clients[who]
    return lambda: client.get(path)


def _measure(fetch: Callable, requests: int) -> Figures:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        response = fetch()
    assert response.status_code == 200, (response.status_code, response.content[:300])
    queries = len(captured)
    fetch()
    times, sql, cpu = [], [], []
    for _ in range(requests):
        with CaptureQueriesContext(connection) as captured:
            started, cpu_started = time.perf_counter(), time.process_time()
            response = fetch()
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
        sql.append(sum(float(q["time"]) for q in captured.captured_queries) * 1000)
    cuts = statistics.quantiles(times, n=20, method="inclusive")
    return Figures(statistics.median(times), cuts[18], len(response.content), queries,
                   statistics.median(sql), statistics.median(cpu))


def _profile(label: str, fetch: Callable) -> None:
    """Where one request's time goes (--profile LABEL): to find why a goal is missed."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(fetch)
    print(f"\nprofile of {label!r}:")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)


def _print(results: dict[str, Figures], args: argparse.Namespace) -> None:
    from django.db import connection

    load = ", ".join(f"{n:.1f}" for n in os.getloadavg())
    print(f"\n{args.hosts} hosts, {args.days} days of 1-minute samples; {args.requests} "
          "requests each, Django test client in-process (server time); "
          f"{os.cpu_count()} CPUs, load average {load}; normal priority")
    print(f"{'request':<24}{'p50 ms':>8}{'p95 ms':>8}{'SQL ms':>8}{'CPU ms':>8}{'bytes':>9}"
          f"{'qs':>4}  goal")
    for label, f in results.items():
        goal = GOALS.get(label)
        verdict = "" if goal is None else (
            f"p95 < {goal:.0f} ms: {'met' if f.p95_ms < goal else 'MISSED'}")
        print(f"{label:<24}{f.p50_ms:>8.1f}{f.p95_ms:>8.1f}{f.sql_ms:>8.1f}{f.cpu_ms:>8.1f}"
              f"{f.bytes:>9}{f.queries:>4}  {verdict}")
    print("(SQL ms: p50 of the time in queries; CPU ms: p50 of this process's CPU time)")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
        [total] = cursor.fetchone()
        cursor.execute("""
            SELECT relname, pg_size_pretty(pg_total_relation_size(oid))
            FROM pg_class WHERE relname IN ('telemetry_rawsample', 'telemetry_rollup',
                                            'telemetry_rawchunk', 'telemetry_rollupchunk')""")
        tables = ", ".join(f"{name} {size}" for name, size in cursor.fetchall())
    print(f"\ndatabase size: {total} ({tables}, indexes and TOAST included)")


def _minute(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def _q(moment: datetime) -> str:
    from urllib.parse import quote

    return quote(moment.isoformat())


def _url(text: str) -> tuple[str, str, str]:
    label, _, path = text.partition("=")
    if not path.startswith("/"):
        raise argparse.ArgumentTypeError("expected LABEL=/path (a {host} is the host's id)")
    return label, "api" if path.startswith("/api/") else "ui", path


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=200, help="hosts in the fleet (200)")
    parser.add_argument("--days", type=int, default=7, help="days of samples per host (7)")
    parser.add_argument("--requests", type=int, default=30, help="timed requests per URL")
    parser.add_argument("--url", type=_url, action="append", default=[],
                        help="another URL to time, LABEL=/path ({host}, {from24}, "
                             "{from7d}, {to} are filled in)")
    parser.add_argument("--rows", action="store_true",
                        help="raw samples and rollups one row each, as before chunks")
    parser.add_argument("--profile", action="append", default=[], metavar="LABEL",
                        help="print where one request of LABEL spends its time")
    return parser.parse_args()


if __name__ == "__main__":
    main()
