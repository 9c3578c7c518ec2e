"""The metrics the read API serves, and their points from stored rows.

Each metric reads one source of the stored rows (apps.telemetry.core.series)
and is either a gauge (a value as sampled: ARC size, Dirty, capacity) or a
rate made from two consecutive rows by apps.telemetry.core.rates (so a
reboot, a reset counter or a missed sample is an unknown point, never a
spike). Per-pool, per-dataset and per-cluster metrics give one series per
key (the pool or dataset name, the cluster's data directory).

From rolled-up rows a gauge is its bucket's average, and a rate runs from
one bucket's last counter values to the next one's; a bucket whose counter
went down (inside it, or from the previous bucket) makes that point unknown.

A point's value is None when it is not known: the graph draws a gap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from apps.telemetry.core import series
from apps.telemetry.core.pgstats import PgStats
from apps.telemetry.core.rates import Rates, rates
from apps.telemetry.core.sample import Arc, Cluster, Sample

Row = tuple[datetime, dict]  # (time, the stored row's source and uptime)
Pick = Callable[[Rates, str | None], float | None]
Compute = Callable[[dict], float | None]  # a gauge made from several fields of one key

_ARC_FIELDS = tuple(Arc.__dataclass_fields__)
_PG_FIELDS = tuple(name for name in PgStats.__dataclass_fields__ if name != "connections")


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    source: str  # the stored row's top-level key
    description: str
    per: str | None = None  # "pool", "dataset", "cluster": a series per key
    field: str | None = None  # a gauge's field
    pick: Pick | None = None  # a rate's value from two rows' Rates
    reads: tuple[str, ...] = ()  # the source's fields it needs (empty: all of them)
    compute: Compute | None = None  # a gauge from the `reads` fields (their averages)

    @property
    def fields_read(self) -> tuple[str, ...]:
        """The fields to fetch from each row (of each key's values, per key)."""
        return self.reads or ((self.field,) if self.field else ())


@dataclass(frozen=True)
class Series:
    key: str | None
    points: list[tuple[datetime, float | None]]


def _pg(attribute: str) -> Pick:
    def pick(interval: Rates, key: str | None) -> float | None:
        pg = interval.clusters.get(key or "")
        return None if pg is None else getattr(pg, attribute)
    return pick


def _checkpoints_per_hour(interval: Rates, key: str | None) -> float | None:
    pg = interval.clusters.get(key or "")
    if pg is None or pg.checkpoints_timed is None or pg.checkpoints_requested is None:
        return None
    return (pg.checkpoints_timed + pg.checkpoints_requested) * 3600 / interval.seconds


def space_saved(values: dict) -> float | None:
    """Bytes compression saves on a dataset (with its children): logicalused - used
    on OpenZFS; where the host has no logicalused (zfs-fuse), used x (ratio - 1)."""
    used, logical = values.get("used"), values.get("logicalused")
    if used is None:
        return None
    if logical is not None:
        return max(logical - used, 0)
    ratio = values.get("compressratio")
    return max(used * (ratio - 1), 0) if ratio is not None else None


def _arc_hit_ratio(interval: Rates, _key: str | None) -> float | None:
    return interval.arc.hit_ratio if interval.arc else None


METRICS = {metric.name: metric for metric in (
    Metric("arc_hit_rate", "ratio", "arc", "ARC hits / ARC reads over each interval (0..1).",
           pick=_arc_hit_ratio, reads=("hits", "misses", "iohits")),
    Metric("arc_size", "bytes", "arc", "ARC size.", field="size"),
    Metric("arc_c", "bytes", "arc", "ARC target size (c).", field="c"),
    Metric("arc_c_max", "bytes", "arc", "ARC maximum size (c_max).", field="c_max"),
    Metric("dirty", "bytes", "memory", "Dirty page cache (/proc/meminfo Dirty).",
           field="dirty"),
    Metric("writeback", "bytes", "memory", "Page cache under writeback (/proc/meminfo).",
           field="writeback"),
    Metric("pool_capacity", "percent", "pools", "Pool capacity, per pool.", per="pool",
           field="capacity"),
    Metric("zfs_dirty", "bytes", "pools", "ZFS dirty data: the most a txg of the interval "
           "carried into its sync, per pool (OpenZFS txg history).", per="pool",
           field="txg_dirty_max"),
    Metric("space_saved", "bytes", "datasets", "Space compression saves, per dataset "
           "(with its children).", per="dataset", compute=space_saved,
           reads=("used", "logicalused", "compressratio")),
    Metric("compressratio", "ratio", "datasets", "Compression ratio, per dataset.",
           per="dataset", field="compressratio"),
    Metric("tps", "per_second", "clusters", "Transactions (commits and rollbacks) per "
           "second, per cluster.", per="cluster", pick=_pg("tps"),
           reads=("xact_commit", "xact_rollback")),
    Metric("cache_hit", "ratio", "clusters", "Shared buffer hits / block reads, per "
           "cluster (0..1).", per="cluster", pick=_pg("cache_hit_ratio"),
           reads=("blks_hit", "blks_read")),
    Metric("wal_bytes_per_s", "bytes_per_second", "clusters", "WAL written per second, "
           "per cluster.", per="cluster", pick=_pg("wal_bytes_per_second"),
           reads=("wal_bytes", "wal_position")),
    Metric("checkpoints", "per_hour", "clusters", "Checkpoints (timed and requested) per "
           "hour, per cluster.", per="cluster", pick=_checkpoints_per_hour,
           reads=("checkpoints_timed", "checkpoints_requested")),
    Metric("connections", "count", "clusters", "Client connections, per cluster.",
           per="cluster", field="connections"),
    Metric("xid_age", "count", "clusters", "Oldest database's transaction ID age "
           "(wraparound), per cluster.", per="cluster", field="xid_age_max"),
)}


# -- raw rows --------------------------------------------------------------------------

def raw_series(metric: Metric, rows: list[Row], interval: timedelta) -> list[Series]:
    """Rows: (taken_at, {"uptime": ..., metric.source: ...}) in time order."""
    keys = _keys(metric, (values for _, values in rows))
    if metric.pick is None:
        return [Series(key, [(at, _gauge(metric, values.get(metric.source), key))
                             for at, values in rows]) for key in keys]
    samples = [_sample(at, values.get("uptime"), metric.source, values.get(metric.source))
               for at, values in rows]
    pairs = list(zip(samples, samples[1:], strict=False))
    return [Series(key, [(after.taken_at, _rate(metric, rates(before, after, interval), key))
                         for before, after in pairs]) for key in keys]


def _gauge(metric: Metric, source: dict | None, key: str | None) -> float | None:
    values = _of_key(source, key)
    if values is None:
        return None
    return metric.compute(values) if metric.compute else values.get(metric.field)


def _rate(metric: Metric, interval: Rates, key: str | None) -> float | None:
    if interval.gap or not interval.seconds:
        return None  # samples were missed: a gap, not a line across it
    return metric.pick(interval, key)  # type: ignore[misc]


# -- rolled-up rows ----------------------------------------------------------------------

def rolled_series(metric: Metric, rows: list[Row], width: timedelta) -> list[Series]:
    """Rows: (bucket start, {metric.source: rolled-up values}) in time order."""
    keys = _keys(metric, (values for _, values in rows))
    if metric.pick is None:
        return [Series(key, [(start, _gauge_avg(metric, values.get(metric.source), key))
                             for start, values in rows]) for key in keys]
    points: dict[str | None, list[tuple[datetime, float | None]]] = {key: [] for key in keys}
    for (_, before), (start, after) in zip(rows, rows[1:], strict=False):
        pair = _bucket_pair(metric.source, before.get(metric.source), after.get(metric.source))
        interval = rates(*pair, width) if pair else None
        for key in keys:
            value = _rate(metric, interval, key) if interval else None
            points[key].append((start, value))
    return [Series(key, points[key]) for key in keys]


def _gauge_avg(metric: Metric, source: dict | None, key: str | None) -> float | None:
    values = _of_key(source, key)
    if values is None:
        return None
    if metric.compute:
        return metric.compute({name: _avg(values.get(name)) for name in metric.reads})
    return _avg(values.get(metric.field))


def _avg(bucket: object) -> float | None:
    return bucket["g"][2] if isinstance(bucket, dict) and "g" in bucket else None


def _bucket_pair(source: str, before: dict | None,
                 after: dict | None) -> tuple[Sample, Sample] | None:
    """Two samples at the buckets' last counter values; a counter that went down in
    `after` (or since `before`) is left unknown in `before`, so its rate is None."""
    if not before or not after:
        return None
    plain_before: dict = {}
    plain_after: dict = {}
    times_before, times_after = [], []
    for path, value in series.leaves(after):
        if not (isinstance(value, dict) and "c" in value):
            continue
        bucket = series.counter_bucket(datetime.min, value)
        series.put(plain_after, path, bucket.last)
        times_after.append(bucket.last_at)
        earlier = _at(before, path)
        if isinstance(earlier, dict) and "c" in earlier:
            previous = series.counter_bucket(datetime.min, earlier)
            times_before.append(previous.last_at)
            if not bucket.reset and bucket.first >= previous.last:
                series.put(plain_before, path, previous.last)
    if not times_before or not times_after:
        return None
    return (_sample(max(times_before), None, source, plain_before),
            _sample(max(times_after), None, source, plain_after))


def _at(values: dict, path: series.Path) -> object:
    for key in path:
        if not isinstance(values, dict):
            return None
        values = values.get(key)  # type: ignore[assignment]
    return values


# -- shared ---------------------------------------------------------------------------------

def _keys(metric: Metric, sources: Iterable[dict]) -> list[str | None]:
    if metric.per is None:
        return [None]
    keys: dict[str, None] = {}
    for values in sources:
        keys |= dict.fromkeys((values.get(metric.source) or {}).keys())
    return sorted(keys)


def _of_key(source: dict | None, key: str | None) -> dict | None:
    if source is None:
        return None
    return source if key is None else source.get(key)


def _sample(at: datetime, uptime: float | None, source: str, values: dict | None) -> Sample:
    """A Sample carrying just the source a metric needs, for rates()."""
    arc = clusters = None
    if source == "arc" and values is not None:
        arc = Arc(**{name: values.get(name) for name in _ARC_FIELDS})
    if source == "clusters" and values is not None:
        clusters = tuple(Cluster(key, PgStats(**{name: stats.get(name) for name in _PG_FIELDS}))
                         for key, stats in values.items())
    return Sample(taken_at=at, uptime=uptime, memory=None, load=None, arc=arc, dmu_tx=None,
                  pools=None, datasets=None, clusters=clusters or ())


# -- one interval's values (the VictoriaMetrics store) ----------------------------------------

def interval_values(interval_rates: Rates, stored: dict) -> list[tuple[str, str | None, float]]:
    """(metric, key, value) of every metric at a sample: what a raw-resolution graph
    draws at that point, worked out once when the sample is taken. `stored` is the
    sample's stored row (series.stored: txg figures come from the previous sample);
    `interval_rates` is rates() from the sample before it, as raw_series runs them, and
    an unknown value (a first sample, a gap, a reboot, a field the host lacks) is left
    out, never written."""
    found = []
    for metric in METRICS.values():
        source = stored.get(metric.source)
        for key in _keys(metric, [stored]):
            if metric.pick is None:
                value = _gauge(metric, source, key)
            else:
                value = _rate(metric, interval_rates, key)
            if value is not None:
                found.append((metric.name, key, float(value)))
    return found
