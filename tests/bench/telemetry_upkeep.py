"""Telemetry upkeep at fleet scale: the collector's database work per round, the
rollup-and-prune tick, and storage per host, each beside its goal and a floor.

    .venv/bin/python -m tests.bench.telemetry_upkeep [--hosts 1000 10000] [--rounds 3]
        [--storage-hosts 5]

Not a test: it prints figures. In a database of its own with a random suffix (two
runs never collide), for each size: one host from a replayed real discovery copied
to N hosts (tests/bench/seed.py), then

- collector: a round of N answers (the OpenZFS 2.3 VM test host's captured answer,
  tests/telemetry/fixtures/openzfs-2.3, with its real txg history of 34 rows, moved)
  recorded by services.record_all, the first after a restart (previous samples read
  from the database) and --rounds later ones; floor: a bare COPY of the same raw rows into
  a table like telemetry_rawsample. Goal: 10 % of TELEMETRY_INTERVAL.
- rollup ticks: at the hour (every host's 5-minute bucket made, every host's
  hour merged from twelve, a 5-minute bucket of raw rows past 48 h, an hour of
  5-minute rollups past 30 days and hourly ones past 400 days pruned); the tick
  after it (a 5-minute bucket made, the hour's twelve put into one chunk per
  host, and the raw rows of the hour before into one chunk per host); the tick
  after midnight (the same, and the day's hourly buckets put into one chunk per
  host). Each beside the same tick as before chunks
  (compaction off, rollups one row per bucket); floor: a bare COPY of the rows
  and chunks it writes. Goal: 10 % of TELEMETRY_ROLLUP_INTERVAL.
- storage: --storage-hosts hosts with the whole default retention (48 h raw,
  30 d of 5-minute and 400 d of hourly rollups), the tables' size (indexes,
  TOAST and layouts included) per host: raw samples and rollups one row each
  (as before chunks), then the same rows compacted into chunks by the
  product's own tick code (apps.telemetry.upkeep.compact: every closed span,
  raw hours up to RAW_LAG before the end) and the tables rewritten (VACUUM
  FULL: the steady state, where autovacuum reuses the space of compacted
  rows), beside the rollups in the JSON form written before packing. Goal: 20
  MiB.

No renice: the load average is printed.
"""

from __future__ import annotations

import argparse
import contextlib
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


def _answer():
    """What a host answers each round, and the rows of the storage figures: the
    OpenZFS 2.3 VM test host's captured sample (a real txg history: the state row and
    a restart's read-back carry what is kept of it)."""
    from dataclasses import replace

    from tests.telemetry.fixtures import openzfs_samples

    _, answer = openzfs_samples("2.3")
    return lambda at: replace(answer, taken_at=at)


# -- one size ---------------------------------------------------------------------------

def _size(count: int, rounds: int, storage: tuple[float, float]) -> None:
    from django.conf import settings

    started = time.monotonic()
    hosts = _fleet(count)
    print(f"\n{count} hosts seeded in {time.monotonic() - started:.0f} s", flush=True)
    interval = settings.POZOL["TELEMETRY_INTERVAL"]
    tick_every = settings.POZOL["TELEMETRY_ROLLUP_INTERVAL"]
    first, later, floor = _collector(hosts, rounds)
    ticks = {(after, chunks): _tick(hosts, chunks=chunks, after=after)
             for after in (None, "hour", "midnight") for chunks in (False, True)}
    print(f"{count} hosts; load average {_load()}")
    print(f"{'':34}{'ours':>10}{'floor':>10}{'x floor':>9}{'budget':>10}  goal")
    _line("collector round, first after restart", first, floor, interval * 0.1)
    _line(f"collector round, later (median of {rounds})", later, floor, interval * 0.1)
    for after, label in ((None, "rollup tick at the hour"), ("hour", "the tick after it"),
                         ("midnight", "the tick after midnight")):
        for chunks in (True, False):
            tick, made, pruned, tick_floor, chunked = ticks[after, chunks]
            _line(label if chunks else "  the same before chunks", tick, tick_floor,
                  tick_every * 0.1)
            print(f"  (made {made} rollups, pruned {pruned:,} rows"
                  + (f", wrote {chunked} chunks)" if chunks else ")"))
    chunked, rows, json_form = storage
    print(f"{'storage at default retention, MiB/host':<34}{chunked:>10.1f}{'':>10}{'':>9}"
          f"{20.0:>10.1f}  {'met' if chunked <= 20 else 'MISSED'}"
          f"  (before chunks: {rows:.1f}; JSON rollups as before packing: {json_form:.1f})",
          flush=True)


def _line(label: str, ours: float, floor: float, budget: float) -> None:
    print(f"{label:<34}{ours:>9.2f}s{floor:>9.2f}s{ours / floor:>9.1f}{budget:>9.1f}s  "
          f"{'met' if ours <= budget else 'MISSED'}", flush=True)


def _load() -> str:
    return ", ".join(f"{n:.1f}" for n in os.getloadavg())


# -- collector --------------------------------------------------------------------------

def timed_rounds(hosts: list, rounds: int) -> tuple[list[float], object, object]:
    """rounds+1 collector rounds of every host's answer recorded by services.record_all,
    the first after a restart (nothing in memory): each round's seconds, the last
    round's sample and the one every host had before the first."""
    from apps.telemetry import services
    from apps.telemetry.core.rates import as_before
    from apps.telemetry.models import HostTelemetry

    sample_at = _answer()
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=rounds + 2)
    previous = sample_at(start)
    stored = as_before(previous).to_dict()  # as a round leaves it in the state row
    HostTelemetry.objects.bulk_create(
        [HostTelemetry(host=h, last_sample=stored, last_sample_at=start, recent={})
         for h in hosts], batch_size=1000)
    skipped = {h.pk: [] for h in hosts}
    times = []
    for n in range(rounds + 1):
        sample = sample_at(start + timedelta(minutes=n + 1))
        answers = [services.Taken(h.pk, sample, 0.2) for h in hosts]
        if n == 0:
            services._previous.clear()  # a restarted worker: nothing in memory
        server_before, cpu_began = _server_counters(), time.process_time()
        began = time.perf_counter()
        services.record_all(answers, skipped)
        times.append(time.perf_counter() - began)
        _print_round(n, times[-1], time.process_time() - cpu_began, server_before)
    return times, sample, previous


def _server_counters() -> tuple[int, int, int]:
    """The server's WAL bytes and full-page images written so far, and its checkpoints:
    what can make one round slower than another on the same code."""
    from django.db import connection

    with connection.cursor() as cursor:
        # A backend reports its counts at most once a second: have this one's reported
        # now (it is the one that wrote the round), before the next statement reads.
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT wal_bytes, wal_fpi FROM pg_stat_wal")
        wal_bytes, fpi = cursor.fetchone()
        cursor.execute("SELECT to_regclass('pg_stat_checkpointer') IS NOT NULL")
        cursor.execute("SELECT num_timed + num_requested FROM pg_stat_checkpointer"
                       if cursor.fetchone()[0] else  # PostgreSQL 17 moved them
                       "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")
        (checkpoints,) = cursor.fetchone()
    return int(wal_bytes), fpi, checkpoints


def _print_round(n: int, seconds: float, cpu: float, before: tuple[int, int, int]) -> None:
    wal_bytes, fpi, checkpoints = (b - a for a, b in zip(before, _server_counters(), strict=True))
    print(f"  round {n}: {seconds:.2f} s, of it {cpu:.2f} s this process's CPU; server "
          f"wrote {wal_bytes / MIB:.0f} MiB of WAL, {fpi:,} full-page images, "
          f"{checkpoints} checkpoints began", flush=True)


def _collector(hosts: list, rounds: int) -> tuple[float, float, float]:
    import statistics

    from django.db import connection

    from apps.telemetry.core import series

    times, sample, previous = timed_rounds(hosts, rounds)
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

def _tick(hosts: list, *, chunks: bool,
          after: str | None = None) -> tuple[float, int, int, float, int]:
    """The tick at the hour (or the one `after` it, or after midnight: the ticks that
    compact) as the product runs it (`chunks`), or as it ran before chunks:
    compaction off, and the old rollups it prunes one row per bucket."""
    from django.db import connection

    from apps.telemetry import upkeep
    from apps.telemetry.models import RollupChunk

    if after is not None:
        return _tick_after(hosts, chunks=chunks, midnight=after == "midnight")
    from apps.telemetry import store
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
    RollupChunk.objects.all().delete()
    # Raw rows of the last bucket; 5-minute rollups of the hour's first eleven.
    _copy_raw(hosts, rows[-5:])
    _copy_raw(hosts, _minutes(hour - keep.raw - FIVE_MINUTES, 5))  # past 48 h
    old_five = packing.roll_up(_minutes(hour - keep.five_minute - HOUR, 60), FIVE_MINUTES)
    old_hour = packing.merge(old_five, HOUR)
    old_hour[0].start = hour - keep.hourly - HOUR
    _copy_rollups(hosts, "5m", five[:-1])
    if chunks:  # what is past its retention is in chunks
        _copy_chunks(hosts, "5m", old_five[0].start, old_five)
        _copy_chunks(hosts, "1h", old_hour[0].start.replace(hour=0), old_hour)
    else:
        _copy_rollups(hosts, "5m", old_five)
        _copy_rollups(hosts, "1h", old_hour)
    RollupMark.objects.update_or_create(resolution="5m", defaults={
        "rolled_to": hour - FIVE_MINUTES, "raw_id": RawSample.objects.order_by("-id")
        .values_list("id", flat=True).first(), "compacted_to": hour - HOUR})
    RollupMark.objects.update_or_create(resolution="1h", defaults={
        "rolled_to": hour - HOUR, "compacted_to": hour.replace(hour=0)})
    RollupMark.objects.update_or_create(resolution=upkeep.RAW, defaults={
        "compacted_to": hour - 2 * HOUR})
    tick, done, chunked = _timed_tick(settled_now, chunks)
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
    return tick, done.five_minute + done.hourly, done.pruned, floor, chunked


def _timed_tick(now: datetime, chunks: bool):
    """One maintain(now), compaction off unless `chunks`: (seconds, what it did, chunks
    it wrote)."""
    from unittest import mock

    from django.db import connection

    from apps.telemetry import upkeep

    with connection.cursor() as cursor:
        for table in ("rawsample", "rollup", "rollupchunk"):
            cursor.execute(f"VACUUM ANALYZE telemetry_{table}")
    off = mock.patch.object(upkeep, "compact", lambda mark, until, budget=None: 0)
    with off if not chunks else contextlib.nullcontext():
        began = time.perf_counter()
        done = upkeep.maintain(now)
        tick = time.perf_counter() - began
    return tick, done, done.compacted


def _tick_after(hosts: list, *, chunks: bool,
                midnight: bool) -> tuple[float, int, int, float, int]:
    """The tick after the hour's (after midnight's): it makes one 5-minute bucket and,
    with chunks, puts the hour's twelve (and the day's hourly ones) into chunks.
    Floor: a bare COPY of the rows and chunks it writes."""
    from django.db import connection

    from apps.telemetry import store, upkeep
    from apps.telemetry.core import packing, rawpack
    from apps.telemetry.core.rollup import FIVE_MINUTES, HOUR
    from apps.telemetry.models import RawChunk, RawSample, Rollup, RollupChunk, RollupMark

    base = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    if midnight:
        base = base.replace(hour=0)
    now = base + FIVE_MINUTES + upkeep.ROLLUP_GRACE + timedelta(seconds=30)
    keep = upkeep.retention()
    RawSample.objects.all().delete()
    RawChunk.objects.all().delete()
    Rollup.objects.all().delete()
    RollupChunk.objects.all().delete()
    rows = _minutes(base - HOUR, 60)
    five = packing.roll_up(rows, FIVE_MINUTES)
    hours = packing.merge(five, HOUR)
    if midnight:  # the day that just ended, as hourly buckets
        hours = packing.merge(packing.roll_up(_minutes(base - upkeep.DAY, 23 * 60),
                                              FIVE_MINUTES), HOUR) + hours
    _copy_raw(hosts, _minutes(base, 5))
    raw_hour = _minutes(base - 2 * HOUR, 60)  # an hour behind the rollups: compacted now
    _copy_raw(hosts, raw_hour)
    _copy_raw(hosts, _minutes(base + FIVE_MINUTES - keep.raw, 5))  # past 48 h
    _copy_rollups(hosts, "5m", five)
    _copy_rollups(hosts, "1h", hours)
    RollupMark.objects.update_or_create(resolution="5m", defaults={
        "rolled_to": base, "raw_id": RawSample.objects.order_by("-id")
        .values_list("id", flat=True).first(), "compacted_to": base - HOUR})
    RollupMark.objects.update_or_create(resolution="1h", defaults={
        "rolled_to": base, "compacted_to": base.replace(hour=0) - (
            upkeep.DAY if midnight else timedelta(0))})
    RollupMark.objects.update_or_create(resolution=upkeep.RAW, defaults={
        "compacted_to": base - 2 * HOUR})
    tick, done, chunked = _timed_tick(now, chunks)
    if chunks:  # the ticks after it, until the compaction it began is done
        later, more, hour_in = [], 1, None
        while more and len(later) < 300:  # a day's hourly buckets go in 240ths
            began = time.perf_counter()
            more = upkeep.maintain(now + FIVE_MINUTES * (len(later) + 1)).compacted
            later.append(time.perf_counter() - began)
            chunked += more
            compacted = dict(RollupMark.objects.values_list("resolution", "compacted_to"))
            if hour_in is None and compacted["5m"] >= base and compacted[upkeep.RAW] >= (
                    base - HOUR):
                hour_in = len(later)
        hour_in = hour_in or len(later)
        hour = later[:hour_in]
        print(f"  (compacting the hour took {hour_in} ticks more, each "
              f"{min(hour):.2f}-{max(hour):.2f} s"
              + (f"; the day {len(later)} ticks in all, the rest each "
                 f"{min(later[hour_in:]):.2f}-{max(later[hour_in:]):.2f} s"
                 if midnight and len(later) > hour_in else "") + ")", flush=True)
    # The floor: the 5-minute rows and the chunks it wrote, packed already, bare COPYs.
    made = packing.roll_up(_minutes(base, 5), FIVE_MINUTES)[0]
    ids = store.layout_ids([made.layout])
    written = [packing.pack_chunk(base - HOUR, five)]
    if midnight:
        written.append(packing.pack_chunk(base - upkeep.DAY, hours))
    raw_chunk = rawpack.pack_samples(base - 2 * HOUR, [(at, values, {})
                                                       for at, values in raw_hour])
    chunk_ids = store.layout_ids([*(layout for layout, _ in written), raw_chunk[0]])
    with connection.cursor() as cursor:
        for table in ("rollup", "rollupchunk", "rawchunk"):
            cursor.execute(f"DROP TABLE IF EXISTS floor_{table}")
            cursor.execute(f"CREATE TABLE floor_{table} (LIKE telemetry_{table} INCLUDING ALL)")
        began = time.perf_counter()
        with cursor.cursor.copy("COPY floor_rollup (host_id, resolution, start, layout_id, "
                                "data) FROM STDIN") as out:
            data = packing.pack(made)
            for h in hosts:
                out.write_row((h.pk, "5m", made.start, ids[made.layout], data))
        if chunks:
            with cursor.cursor.copy("COPY floor_rollupchunk (host_id, resolution, start, "
                                    "layout_id, data) FROM STDIN") as out:
                for (layout, data), (resolution, start) in zip(
                        written, (("5m", base - HOUR), ("1h", base - upkeep.DAY)),
                        strict=False):
                    for h in hosts:
                        out.write_row((h.pk, resolution, start, chunk_ids[layout], data))
            with cursor.cursor.copy("COPY floor_rawchunk (host_id, start, layout_id, data) "
                                    "FROM STDIN") as out:
                for h in hosts:
                    out.write_row((h.pk, base - 2 * HOUR, chunk_ids[raw_chunk[0]],
                                   raw_chunk[1]))
        floor = time.perf_counter() - began
        for table in ("rollup", "rollupchunk", "rawchunk"):
            cursor.execute(f"DROP TABLE floor_{table}")
    return tick, done.five_minute + done.hourly, done.pruned, floor, chunked


def _minutes(start: datetime, count: int) -> list[tuple[datetime, dict]]:
    from apps.telemetry.core import series
    from tests.bench.telemetry_scale import _moved

    base = series.stored(_answer()(start))
    return [(start + timedelta(minutes=m, seconds=30), _moved(base, m)) for m in range(count)]


def _copy_raw(hosts: list, rows: list[tuple[datetime, dict]]) -> None:
    from apps.telemetry import store

    texts = [(at, json.dumps(values)) for at, values in rows]
    store.copy("telemetry_rawsample", ("host_id", "taken_at", "values", "missing"),
               ((h.pk, at, text, "{}") for h in hosts for at, text in texts))


def _copy_chunks(hosts: list, resolution: str, start: datetime, buckets: list) -> None:
    from django.db import transaction

    from apps.telemetry import store
    from apps.telemetry.core import packing

    layout, data = packing.pack_chunk(start, buckets)
    with transaction.atomic():  # its temporary table lives as long as a transaction
        store.save_chunks(resolution, [(h.pk, start, layout, data) for h in hosts])


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

def _storage(count: int) -> tuple[float, float, float]:
    """MiB per host at the default retention: in chunks, as rows (before chunks), and
    with JSON rollups (before packing)."""
    from django.db import connection, transaction

    from apps.telemetry import upkeep
    from apps.telemetry.core import packing, rollup
    from apps.telemetry.core.rollup import FIVE_MINUTES, HOUR
    from apps.telemetry.models import RollupMark

    started = time.monotonic()
    hosts = _fleet(count)
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
    sizes = {}
    for form in ("rows", "chunks", "JSON"):
        if form != "chunks":
            with connection.cursor() as cursor:
                cursor.execute("TRUNCATE telemetry_rawsample, telemetry_rawchunk, "
                               "telemetry_rollup, telemetry_rollupchunk")
            _copy_raw(hosts, raw)
            _copy_rollups(hosts, "5m", five, as_json=form == "JSON")
            _copy_rollups(hosts, "1h", hourly, as_json=form == "JSON")
        else:  # the rows of before, compacted by the tick's own code
            began = time.monotonic()
            for resolution in ("5m", "1h", upkeep.RAW):  # as ticks do, a few spans each
                until = rollup.bucket_start(end - (upkeep.RAW_LAG if resolution == upkeep.RAW
                                                   else timedelta(0)),
                                            upkeep.SPANS[resolution])
                mark, _ = RollupMark.objects.update_or_create(
                    resolution=resolution, defaults={"rolled_to": end, "compacted_to": None})
                with transaction.atomic():
                    upkeep.compact(mark, until)
                while mark.compacted_to < until:
                    with transaction.atomic():
                        upkeep.compact(mark, until)
            print(f"  compacting {count} hosts' rows took {time.monotonic() - began:.0f} s",
                  flush=True)
        sizes[form] = _sizes(count, form)
    print(f"storage: {count} hosts x {len(raw)} raw rows, {len(five)} 5-minute and "
          f"{len(hourly)} hourly rollups each, in {time.monotonic() - started:.0f} s: "
          f"{sizes['chunks']:.1f} MiB/host in chunks, {sizes['rows']:.1f} as rows, "
          f"{sizes['JSON']:.1f} with JSON rollups", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE telemetry_rawsample, telemetry_rawchunk, telemetry_rollup, "
                       "telemetry_rollupchunk")
    return sizes["chunks"], sizes["rows"], sizes["JSON"]


_TABLES = ("telemetry_rawsample", "telemetry_rawchunk", "telemetry_rollup",
           "telemetry_rollupchunk", "telemetry_layout")


def _sizes(count: int, form: str) -> float:
    """MiB per host in the telemetry tables, rewritten first (no dead rows counted)."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in _TABLES:
            cursor.execute(f"VACUUM FULL ANALYZE {table}")
        cursor.execute("SELECT relname, pg_total_relation_size(c.oid), pg_indexes_size(c.oid) "
                       "FROM pg_class c WHERE relname = ANY(%s)", [list(_TABLES)])
        split = {name: (total, indexes) for name, total, indexes in cursor.fetchall()}
    print(f"  {form}: " + ", ".join(
        f"{name.removeprefix('telemetry_')} {total / MIB / count:.2f} "
        f"(indexes {indexes / MIB / count:.2f})" for name, (total, indexes) in sorted(
            split.items())) + " MiB/host", flush=True)
    return sum(total for total, _ in split.values()) / MIB / count


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
