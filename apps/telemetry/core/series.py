"""A Sample as it is stored per row, and rows rolled up into buckets.

A stored row is plain nested JSON of numbers, by source, with pools,
datasets and clusters keyed by name (so the database can hand out one
source, `values -> 'arc'`, without the rest):

    {"uptime": 3600.5, "memory": {...}, "load": {...}, "arc": {...},
     "dmu_tx": {...}, "pools": {"tank": {...}}, "datasets": {"tank/pg": {...}},
     "clusters": {"/var/lib/postgresql/15/main": {...}}}

Counters stay raw (rates are made when read). Unknown values are left out,
never written as 0. Two things are not stored per row:

- a pool's txg history (up to 100 rows per pool): it is a ring buffer, not a
  counter, so its rates over the interval (apps.telemetry.core.rates
  txg_rates) are made when the sample is taken, from the previous sample,
  and stored as `txg_*` gauges;
- text (pool health, scrub state): the latest sample keeps it whole.

A rolled-up row has the same shape with each number replaced by its bucket:
`{"g": [min, max, avg, count]}` for a gauge, `{"c": [first_at, first,
last_at, last, reset, count]}` for a counter (times as ISO text), made by
apps.telemetry.core.rollup, so counters still give rates between buckets.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta

from apps.common.numbers import is_number
from apps.telemetry.core import rollup
from apps.telemetry.core.pgstats import PgStats
from apps.telemetry.core.rates import txg_rates
from apps.telemetry.core.sample import Arc, DmuTx, Pool, Sample

Values = dict  # nested str -> (number | Values)
Path = tuple[str, ...]

# Fields that only grow until a reset (reboot, module reload, pg_stat_reset):
# rolled up as counters, read as rates.
COUNTERS = frozenset(
    {name for name in Arc.__dataclass_fields__
     if name.endswith(("hits", "misses", "iohits")) or name == "memory_throttle_count"}
    | set(DmuTx.__dataclass_fields__)
    | {"read_errors", "write_errors", "checksum_errors", "data_errors"}
    | {"xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_inserted", "tup_updated",
       "tup_deleted", "temp_bytes", "deadlocks", "wal_position", "wal_records", "wal_fpi",
       "wal_bytes", "wal_buffers_full", "checkpoints_timed", "checkpoints_requested",
       "checkpoint_write_ms", "checkpoint_sync_ms", "checkpoint_buffers"})
_POOL_NUMBERS = ("size", "allocated", "free", "capacity", "fragmentation", "read_errors",
                 "write_errors", "checksum_errors", "data_errors")


def stored(sample: Sample, previous: Sample | None = None) -> Values:
    """The row for `sample`; `previous` (the host's last sample) gives txg rates."""
    values: Values = {"uptime": sample.uptime}
    for source in ("memory", "load", "arc", "dmu_tx"):
        part = getattr(sample, source)
        values[source] = _numbers(vars(part)) if part is not None else None
    if sample.pools is not None:
        values["pools"] = {p.name: _pool(p, previous, sample) for p in sample.pools}
    if sample.datasets is not None:
        values["datasets"] = {d.name: _numbers(vars(d)) for d in sample.datasets}
    values["clusters"] = {c.key: _cluster(c.stats) for c in sample.clusters if c.stats}
    return _known(values)


def _pool(pool: Pool, previous: Sample | None, current: Sample) -> Values:
    values = {name: getattr(pool, name) for name in _POOL_NUMBERS}
    before = previous.pool(pool.name) if previous else None
    seconds = (current.taken_at - previous.taken_at).total_seconds() if previous else 0
    if before and before.txgs is not None and pool.txgs is not None and seconds > 0:
        txgs = txg_rates(before.txgs, pool.txgs, seconds)
        if txgs is not None:
            values |= {"txg_synced": txgs.synced, "txg_written_per_second":
                       txgs.written_per_second, "txg_sync_ms_max": txgs.sync_ms_max,
                       "txg_dirty_max": txgs.dirty_max}
    return _numbers(values)


def _cluster(stats: PgStats) -> Values:
    values = _numbers({k: v for k, v in vars(stats).items() if k != "connections"})
    if stats.connections:
        values["connections"] = sum(stats.connections.values())
        values["connections_active"] = stats.connections.get("active", 0)
    return values


def _numbers(values: dict) -> Values:
    return {k: v for k, v in values.items() if is_number(v)}


def _known(values: Values) -> Values:
    return {k: v for k, v in values.items() if v is not None}


# -- walking rows -----------------------------------------------------------------------

def leaves(values: Values, prefix: Path = ()) -> Iterator[tuple[Path, object]]:
    for key, value in values.items():
        if isinstance(value, dict) and not _is_bucket(value):
            yield from leaves(value, (*prefix, key))
        else:
            yield (*prefix, key), value


def put(values: Values, path: Path, value: object) -> None:
    for key in path[:-1]:
        values = values.setdefault(key, {})
    values[path[-1]] = value


def is_counter(path: Path) -> bool:
    return path[-1] in COUNTERS


def _is_bucket(value: dict) -> bool:
    return value.keys() == {"g"} or value.keys() == {"c"}


# -- rollups ----------------------------------------------------------------------------

def roll_up(rows: Iterable[tuple[datetime, Values]], width: timedelta) -> dict[datetime, Values]:
    """Raw rows -> one rolled-up row per `width` bucket that has any known value."""
    points: dict[Path, list[rollup.Point]] = {}
    for at, values in rows:
        for path, value in leaves(values):
            if isinstance(value, int | float):
                points.setdefault(path, []).append(rollup.Point(at, float(value)))
    buckets: dict[datetime, Values] = {}
    for path, series in points.items():
        if is_counter(path):
            for counter in rollup.rollup_counter(series, width):
                put(buckets.setdefault(counter.start, {}), path, _counter_json(counter))
        else:
            for gauge in rollup.rollup_gauge(series, width):
                put(buckets.setdefault(gauge.start, {}), path, _gauge_json(gauge))
    return buckets


def merge(rows: Iterable[tuple[datetime, Values]], width: timedelta) -> dict[datetime, Values]:
    """Finer rolled-up rows (5-minute) -> coarser ones (hourly)."""
    gauges: dict[Path, list[rollup.GaugeBucket]] = {}
    counters: dict[Path, list[rollup.CounterBucket]] = {}
    for start, values in rows:
        for path, bucket in leaves(values):
            if isinstance(bucket, dict) and "g" in bucket:
                gauges.setdefault(path, []).append(gauge_bucket(start, bucket))
            elif isinstance(bucket, dict) and "c" in bucket:
                counters.setdefault(path, []).append(counter_bucket(start, bucket))
    merged: dict[datetime, Values] = {}
    for path, parts in gauges.items():
        for gauge in rollup.merge_gauges(parts, width):
            put(merged.setdefault(gauge.start, {}), path, _gauge_json(gauge))
    for path, parts in counters.items():
        for counter in rollup.merge_counters(parts, width):
            put(merged.setdefault(counter.start, {}), path, _counter_json(counter))
    return merged


def _gauge_json(bucket: rollup.GaugeBucket) -> dict:
    return {"g": [bucket.min, bucket.max, bucket.avg, bucket.count]}


def _counter_json(bucket: rollup.CounterBucket) -> dict:
    return {"c": [bucket.first_at.isoformat(), bucket.first, bucket.last_at.isoformat(),
                  bucket.last, bucket.reset, bucket.count]}


def gauge_bucket(start: datetime, value: dict) -> rollup.GaugeBucket:
    low, high, avg, count = value["g"]
    return rollup.GaugeBucket(start, low, high, avg, count)


def counter_bucket(start: datetime, value: dict) -> rollup.CounterBucket:
    first_at, first, last_at, last, reset, count = value["c"]
    return rollup.CounterBucket(start, datetime.fromisoformat(first_at), first,
                                datetime.fromisoformat(last_at), last, reset, count)
