"""Telemetry upkeep at fleet scale: the collector's database work per round, the
rollup-and-prune tick, and storage per host, each beside its goal and a floor.

    .venv/bin/python -m tests.bench.telemetry_upkeep [--hosts 1000 10000] [--rounds 3]
        [--storage-hosts 5]

Not a test: it prints figures. In a database of its own with a random suffix (two
runs never collide), for each size: one host from a replayed real discovery copied
to N hosts (tests/bench/seed.py), then

- collector: a round of N answers (one real OpenZFS 2.2 sample, moved) recorded by
  services.record_all, the first after a restart (previous samples read from the
  database) and --rounds later ones; floor: a bare COPY of the same raw rows into
  a table like telemetry_rawsample. Goal: 10 % of TELEMETRY_INTERVAL.
- rollup tick at the hour (the heaviest: every host's 5-minute bucket made, every
  host's hour merged from twelve, a 5-minute bucket of raw rows past 48 h, an
  hour of 5-minute rows past 30 days and hourly rows past 400 days pruned);
  floor: a bare COPY of the same rollup rows it writes. Goal: 10 % of
  TELEMETRY_ROLLUP_INTERVAL.
- storage: --storage-hosts hosts with the whole default retention (48 h raw,
  30 d of 5-minute and 400 d of hourly rollups) as the product writes them, the
  tables' size (indexes, TOAST and layouts included) per host, beside the same
  rollups in the JSON form written before packing. Goal: 20 MiB.

No renice: the load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import time
from datetime import UTC, datetime, timedelta

from tests.bench.database import database_of_its_own
from tests.bench.fresh import server

MIB = 1024 * 1024


def main() -> None:
    args = _arguments()
    name = f"pozol_upkeep_{secrets.token_hex(4)}"
    with database_of_its_own(server(), name):
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django_settings")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        print(f"database {name}; {os.cpu_count()} CPUs; load average at start "
              f"{_load()}", flush=True)
        storage = _storage(args.storage_hosts)
        for hosts in args.hosts:
            _size(hosts, args.rounds, storage)


# -- the fleet --------------------------------------------------------------------------

def _fleet(count: int) -> list:
    from django.db import connection

    from apps.fleet.models import Host
    from tests.bench import seed
    from tests.bench.telemetry_scale import _setup

    with connection.cursor() as cursor:  # each size from an empty control plane
        cursor.execute("TRUNCATE fleet_host, auth_user RESTART IDENTITY CASCADE")
    _, template = _setup()
    hosts = [template, *seed.clone_hosts(template, count - 1)]
    Host.objects.update(last_discovery_at=template.last_discovery_at)
    return hosts


def _sample():
    from apps.telemetry.core.parse import parse_sample
    from tests.telemetry.core.helpers import openzfs_spec
    from tests.telemetry.fixtures import frame, openzfs_sections

    return lambda at: parse_sample(frame(openzfs_sections()), openzfs_spec(), at)


# -- one size ---------------------------------------------------------------------------

def _size(count: int, rounds: int, storage: tuple[float, float]) -> None:
    from django.conf import settings

    started = time.monotonic()
    hosts = _fleet(count)
    print(f"\n{count} hosts seeded in {time.monotonic() - started:.0f} s", flush=True)
    interval = settings.POZOL["TELEMETRY_INTERVAL"]
    tick_every = settings.POZOL["TELEMETRY_ROLLUP_INTERVAL"]
    first, later, floor = _collector(hosts, rounds)
    tick, made, pruned, tick_floor = _tick(hosts)
    print(f"{count} hosts; load average {_load()}")
    print(f"{'':34}{'ours':>10}{'floor':>10}{'x floor':>9}{'budget':>10}  goal")
    _line("collector round, first after restart", first, floor, interval * 0.1)
    _line(f"collector round, later (median of {rounds})", later, floor, interval * 0.1)
    _line("rollup tick at the hour", tick, tick_floor, tick_every * 0.1)
    print(f"  (the tick made {made} rollups and pruned {pruned:,} rows)")
    packed, json_form = storage
    print(f"{'storage at default retention, MiB/host':<34}{packed:>10.1f}{'':>10}{'':>9}"
          f"{20.0:>10.1f}  {'met' if packed <= 20 else 'MISSED'}"
          f"  (JSON rollups as before: {json_form:.1f})", flush=True)


def _line(label: str, ours: float, floor: float, budget: float) -> None:
    print(f"{label:<34}{ours:>9.2f}s{floor:>9.2f}s{ours / floor:>9.1f}{budget:>9.1f}s  "
          f"{'met' if ours <= budget else 'MISSED'}", flush=True)


def _load() -> str:
    return ", ".join(f"{n:.1f}" for n in os.getloadavg())


# -- collector --------------------------------------------------------------------------

def _collector(hosts: list, rounds: int) -> tuple[float, float, float]:
    import statistics

    from django.db import connection

    from apps.telemetry import services
    from apps.telemetry.core import series
    from apps.telemetry.models import HostTelemetry

    sample_at = _sample()
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=rounds + 2)
    previous = sample_at(start)
    HostTelemetry.objects.bulk_create(
        [HostTelemetry(host=h, last_sample=previous.to_dict(), last_sample_at=start,
                       recent={}) for h in hosts], batch_size=1000)
    skipped = {h.pk: [] for h in hosts}
    times = []
    for n in range(rounds + 1):
        sample = sample_at(start + timedelta(minutes=n + 1))
        answers = [services.Taken(h.pk, sample, 0.2) for h in hosts]
        if n == 0:
            services._previous.clear()  # a restarted worker: nothing in memory
        began = time.perf_counter()
        services.record_all(answers, skipped)
        times.append(time.perf_counter() - began)
    # The floor: the same raw rows, already made, with one bare COPY.
    text = json.dumps(series.stored(sample, previous))
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS floor_raw")
        cursor.execute("CREATE TABLE floor_raw (LIKE telemetry_rawsample INCLUDING ALL)")
        began = time.perf_counter()
        with cursor.cursor.copy("COPY floor_raw (host_id, taken_at, \"values\", missing) "
                                "FROM STDIN") as out:
            for h in hosts:
                out.write_row((h.pk, sample.taken_at, text, "{}"))
        floor = time.perf_counter() - began
        cursor.execute("DROP TABLE floor_raw")
    return times[0], statistics.median(times[1:]), floor


# -- the rollup tick --------------------------------------------------------------------

def _tick(hosts: list) -> tuple[float, int, int, float]:
    from django.db import connection

    from apps.telemetry import store, upkeep
    from apps.telemetry.core import packing
    from apps.telemetry.core.rollup import FIVE_MINUTES, HOUR
    from apps.telemetry.models import RawSample, Rollup, RollupMark

    now = datetime.now(UTC)
    hour = now.replace(minute=0, second=0, microsecond=0)
    settled_now = hour + upkeep.ROLLUP_GRACE + timedelta(seconds=30)
    keep = upkeep.retention()
    rows = _minutes(hour - HOUR, 60)
    five = packing.roll_up(rows, FIVE_MINUTES)
    RawSample.objects.all().delete()
    Rollup.objects.all().delete()
    # Raw rows of the last bucket; 5-minute rollups of the hour's first eleven.
    _copy_raw(hosts, rows[-5:])
    _copy_raw(hosts, _minutes(hour - keep.raw - FIVE_MINUTES, 5))  # past 48 h
    old_five = packing.roll_up(_minutes(hour - keep.five_minute - HOUR, 60), FIVE_MINUTES)
    old_hour = packing.merge(old_five, HOUR)
    old_hour[0].start = hour - keep.hourly - HOUR
    _copy_rollups(hosts, "5m", [*five[:-1], *old_five])
    _copy_rollups(hosts, "1h", old_hour)
    RollupMark.objects.update_or_create(resolution="5m", defaults={
        "rolled_to": hour - FIVE_MINUTES, "raw_id": RawSample.objects.order_by("-id")
        .values_list("id", flat=True).first()})
    RollupMark.objects.update_or_create(resolution="1h", defaults={"rolled_to": hour - HOUR})
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE telemetry_rawsample")
        cursor.execute("VACUUM ANALYZE telemetry_rollup")
    began = time.perf_counter()
    done = upkeep.maintain(settled_now)
    tick = time.perf_counter() - began
    # The floor: the rows the tick wrote, packed already, with one bare COPY.
    merged = packing.merge(five, HOUR)[0]
    ids = store.layout_ids([five[-1].layout, merged.layout])
    written = [(h.pk, "5m", five[-1], ids[five[-1].layout]) for h in hosts] + [
        (h.pk, "1h", merged, ids[merged.layout]) for h in hosts]
    packed = {id(b): packing.pack(b) for b in (five[-1], merged)}
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS floor_rollup")
        cursor.execute("CREATE TABLE floor_rollup (LIKE telemetry_rollup INCLUDING ALL)")
        began = time.perf_counter()
        with cursor.cursor.copy("COPY floor_rollup (host_id, resolution, start, layout_id, "
                                "data) FROM STDIN") as out:
            for host, resolution, bucket, layout in written:
                out.write_row((host, resolution, bucket.start, layout, packed[id(bucket)]))
        floor = time.perf_counter() - began
        cursor.execute("DROP TABLE floor_rollup")
    return tick, done.five_minute + done.hourly, done.pruned, floor


def _minutes(start: datetime, count: int) -> list[tuple[datetime, dict]]:
    from apps.telemetry.core import series
    from tests.bench.telemetry_scale import _moved

    base = series.stored(_sample()(start))
    return [(start + timedelta(minutes=m, seconds=30), _moved(base, m)) for m in range(count)]


def _copy_raw(hosts: list, rows: list[tuple[datetime, dict]]) -> None:
    from apps.telemetry import store

    texts = [(at, json.dumps(values)) for at, values in rows]
    store.copy("telemetry_rawsample", ("host_id", "taken_at", "values", "missing"),
               ((h.pk, at, text, "{}") for h in hosts for at, text in texts))


def _copy_rollups(hosts: list, resolution: str, buckets: list, *, as_json: bool = False) -> None:
    from apps.telemetry import store
    from apps.telemetry.core import packing

    ids = store.layout_ids(b.layout for b in buckets)
    if as_json:
        made = [(b.start, None, None, json.dumps(packing.values(b))) for b in buckets]
    else:
        made = [(b.start, ids[b.layout], packing.pack(b), None) for b in buckets]
    store.copy("telemetry_rollup", ("host_id", "resolution", "start", "layout_id", "data",
                                    "values"),
               ((h.pk, resolution, *row) for h in hosts for row in made))


# -- storage ----------------------------------------------------------------------------

def _storage(count: int) -> tuple[float, float]:
    """MiB per host at the default retention: packed, and with JSON rollups."""
    from django.db import connection

    from apps.telemetry.core import packing
    from apps.telemetry.core.rollup import FIVE_MINUTES, HOUR

    started = time.monotonic()
    hosts = _fleet(count)
    from apps.telemetry import upkeep

    keep = upkeep.retention()
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    month = _minutes(end - keep.five_minute, int(keep.five_minute / timedelta(minutes=1)))
    five = packing.roll_up(month, FIVE_MINUTES)
    month_hours = packing.merge(five, HOUR)
    hourly = []  # 400 days of hours: the month's shapes again, further back
    for n in range(int(keep.hourly / keep.five_minute) + 1):
        for bucket in month_hours:
            shift = keep.five_minute * n
            moved = packing.Bucket(**{**vars(bucket), "start": bucket.start - shift,
                                      "c_first_at": [t - int(shift.total_seconds() * 1e6)
                                                     for t in bucket.c_first_at],
                                      "c_last_at": [t - int(shift.total_seconds() * 1e6)
                                                    for t in bucket.c_last_at]})
            if moved.start >= end - keep.hourly:
                hourly.append(moved)
    raw = month[-int(keep.raw / timedelta(minutes=1)):]
    sizes = []
    for as_json in (False, True):
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE telemetry_rawsample, telemetry_rollup")
        _copy_raw(hosts, raw)
        _copy_rollups(hosts, "5m", five, as_json=as_json)
        _copy_rollups(hosts, "1h", hourly, as_json=as_json)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE telemetry_rawsample")
            cursor.execute("VACUUM ANALYZE telemetry_rollup")
            cursor.execute("SELECT relname, pg_total_relation_size(c.oid) FROM pg_class c "
                           "WHERE relname IN ('telemetry_rawsample', 'telemetry_rollup', "
                           "'telemetry_layout')")
            split = dict(cursor.fetchall())
        sizes.append(sum(split.values()) / MIB / count)
        print(f"  {'JSON' if as_json else 'packed'} rollups: " + ", ".join(
            f"{name} {size / MIB / count:.1f}" for name, size in sorted(split.items()))
            + " MiB/host", flush=True)
    print(f"storage: {count} hosts x {len(raw)} raw rows, {len(five)} 5-minute and "
          f"{len(hourly)} hourly rollups each, in {time.monotonic() - started:.0f} s: "
          f"{sizes[0]:.1f} MiB/host packed, {sizes[1]:.1f} MiB/host with JSON rollups",
          flush=True)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE telemetry_rawsample, telemetry_rollup")
    return sizes[0], sizes[1]


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 10000],
                        help="fleet sizes, one after the other (1000 10000)")
    parser.add_argument("--rounds", type=int, default=3, help="later collector rounds (3)")
    parser.add_argument("--storage-hosts", type=int, default=5,
                        help="hosts given the whole default retention (5)")
    return parser.parse_args()


if __name__ == "__main__":
    main()
