"""/metrics: the fleet's current values and the control plane's own, for Prometheus.

A custom prometheus_client Collector reads what the collector and discovery
already stored, in a constant number of queries whatever the fleet's size
(hosts with their newest snapshot, each host's newest raw sample and rates,
collector state, pools, replication links, operations by state, operations
still active by kind) and one Redis round trip (queue lengths and the step
latency histogram, apps.ops.timing). It never opens SSH: the web process
serves it.

Labels are bounded by the fleet's inventory: `host`, `pool`, `dataset` (and
`state` for a pool's health, `queue`, `status`, `kind`/`step` for the control
plane's own, all names from the code). No per-snapshot, per-operation or
per-cluster label: PostgreSQL figures are per host (TPS summed over its
clusters, cache hit of its worst cluster), so a host with several clusters
still gives one series.

Rates (ARC hit ratio, TPS, cache hit) are the ones the collector worked out
when it recorded the host's newest sample (HostTelemetry's current values,
apps.telemetry.core.current, through the product's own rate code), the same
the fleet overview shows: a reboot, a reset counter or a missed sample gives
no value, never a spike. A host whose newest sample is older than a few
intervals gives no telemetry series (Prometheus sees them go stale) but still
its reachability.

Scale: the gauges are written straight to the text format (Gauge.lines), not
through prometheus_client's generate_latest, which validates and escapes every
label name of every sample again (the step histogram, a few series, still goes
through it); each host's newest raw row is found through its state row (an
index lookup a host, no sort of the fleet's recent rows) and read without
what no gauge reads; the build runs with the cyclic GC paused. A fleet too big
for one scrape is split: FleetCollector(shard=Shard(I, N)) reads only the hosts whose id mod
N is I (in SQL, every query), so the N shards partition the hosts, and serves
the control plane's own series on shard 0 only (/metrics?shard=I&shards=N;
Prometheus set-up in the README). tests/bench/metrics_scale.py measures both.
"""

from __future__ import annotations

import gc
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta

import redis
from django.conf import settings
from django.db import connection
from django.db.models import Count, OuterRef, Subquery
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from apps.fleet.models import Host, Pool
from apps.ops import timing
from apps.ops.models import Operation
from apps.replication.models import ReplicationLink
from apps.snapshots.models import Snapshot
from apps.telemetry import shards
from apps.telemetry.models import HostTelemetry
from apps.telemetry.shards import WHOLE, Shard

logger = logging.getLogger("pozol.telemetry")

# Samples older than this many intervals are not current values any more.
STALE_INTERVALS = 3
_HEALTHY = "ONLINE"


HOST, POOL, DATASET = ("host",), ("host", "pool"), ("host", "dataset")
# (attribute, metric name without "pozol_", help, labels): every gauge /metrics serves.
GAUGES = (
    ("reachable", "host_reachable", "1 when the host answered its last SSH contact.", HOST),
    ("sample_age", "host_sample_age_seconds", "Seconds since the host's newest telemetry "
     "sample.", HOST),
    ("sample_duration", "host_sample_duration_seconds", "The last telemetry round trip to "
     "the host, seconds.", HOST),
    ("sample_failing", "host_sample_failing", "1 when the host's last telemetry sample "
     "failed (the reason is on the host's page).", HOST),
    ("arc_hit", "host_arc_hit_ratio", "ARC hits / ARC reads between the host's two newest "
     "samples (0..1).", HOST),
    ("arc_size", "host_arc_size_bytes", "ARC size.", HOST),
    ("arc_max", "host_arc_max_bytes", "ARC target maximum (c_max).", HOST),
    ("dirty", "host_dirty_bytes", "Dirty page cache (/proc/meminfo Dirty).", HOST),
    ("writeback", "host_writeback_bytes", "Page cache under writeback (/proc/meminfo).",
     HOST),
    ("available", "host_memory_available_bytes", "/proc/meminfo MemAvailable.", HOST),
    ("tps", "host_tps", "PostgreSQL transactions per second, summed over the host's "
     "clusters, between its two newest samples.", HOST),
    ("cache_hit", "host_cache_hit_ratio", "PostgreSQL shared buffer hits / block reads of "
     "the host's worst cluster, between its two newest samples (0..1).", HOST),
    ("connections", "host_pg_connections", "PostgreSQL client connections, summed over the "
     "host's clusters.", HOST),
    ("xid_age", "host_xid_age", "The oldest transaction ID age of the host's clusters "
     "(wraparound).", HOST),
    ("replication_lag", "host_replication_lag_seconds", "Of the links replicating from the "
     "host, the largest lag: age of the newest snapshot the target received (of the link "
     "itself when it never delivered).", HOST),
    ("snapshot_age", "host_newest_snapshot_age_seconds", "Age of the host's newest "
     "snapshot, as last listed.", HOST),
    ("pool_capacity", "pool_capacity_ratio", "Pool capacity (allocated / size, 0..1).", POOL),
    ("pool_allocated", "pool_allocated_bytes", "Pool allocated space.", POOL),
    ("pool_size", "pool_size_bytes", "Pool size.", POOL),
    ("pool_fragmentation", "pool_fragmentation_ratio", "Pool free space fragmentation "
     "(0..1).", POOL),
    ("pool_healthy", "pool_healthy", "1 when the pool is ONLINE.", POOL),
    ("pool_health", "pool_health", "The pool's health: 1 for its current state.",
     ("host", "pool", "state")),
    ("pool_errors", "pool_checksum_errors", "Checksum errors summed over the pool's vdevs, "
     "as zpool status counts them.", POOL),
    ("compressratio", "dataset_compressratio", "Dataset compression ratio.", DATASET),
    ("used", "dataset_used_bytes", "Dataset used space.", DATASET),
    ("logicalused", "dataset_logicalused_bytes", "Dataset logical used space (before "
     "compression; OpenZFS only).", DATASET),
    ("operations", "operations", "Operations in the database, by status.", ("status",)),
    ("active", "operations_active", "Operations pending, running or waiting, by kind and "
     "status.", ("kind", "status")),
    ("queue", "queue_depth", "Celery messages waiting in each queue (Redis list length).",
     ("queue",)),
    ("redis_up", "redis_up", "1 when /metrics could read the broker's Redis.", ()),
)


class Gauge:
    """One gauge family: its samples as (label values, value), written straight to the
    text format by `lines` (prometheus_client's generate_latest validates and escapes
    every label name of every sample again: most of a big scrape's time)."""

    __slots__ = ("name", "documentation", "labels", "samples")

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...]) -> None:
        self.name, self.documentation, self.labels = name, documentation, labels
        self.samples: list[tuple[Sequence[str], float]] = []

    def add_metric(self, labels: Sequence[str], value: float) -> None:
        self.samples.append((labels, value))

    def lines(self, escaped: dict[str, str]) -> Iterator[str]:
        documentation = self.documentation.replace("\\", "\\\\").replace("\n", "\\n")
        yield f"# HELP {self.name} {documentation}\n# TYPE {self.name} gauge\n"
        name, keys = self.name, self.labels
        if len(keys) == 1:  # the per-host families, most of the lines: no join
            start = f'{name}{{{keys[0]}="'
            for (text,), value in self.samples:
                yield f'{start}{_escaped(escaped, text)}"}} {_number(value)}\n'
            return
        if len(keys) == 2:  # per pool and per dataset: the other half
            start, middle = f'{name}{{{keys[0]}="', f'",{keys[1]}="'
            for (first, second), value in self.samples:
                yield (f'{start}{_escaped(escaped, first)}{middle}'
                       f'{_escaped(escaped, second)}"}} {_number(value)}\n')
            return
        for values, value in self.samples:
            if keys:
                pairs = ",".join(f'{key}="{_escaped(escaped, text)}"'
                                 for key, text in zip(keys, values, strict=True))
                yield f"{name}{{{pairs}}} {_number(value)}\n"
            else:
                yield f"{name} {_number(value)}\n"

    def family(self) -> GaugeMetricFamily:
        """The same as prometheus_client's own (for a registry's collect())."""
        family = GaugeMetricFamily(self.name, self.documentation, labels=list(self.labels))
        for values, value in self.samples:
            family.add_metric(list(values), value)
        return family


def _escaped(cache: dict[str, str], text: str) -> str:
    """A label value in the text format (one host's name repeats in dozens of series)."""
    found = cache.get(text)
    if found is None:
        found = cache[text] = (text.replace("\\", "\\\\").replace("\n", "\\n")
                               .replace('"', '\\"'))
    return found


def _number(value: float) -> str:
    """As the text format wants it: repr for finite floats, +Inf/-Inf/NaN otherwise."""
    if math.isfinite(value):
        return repr(float(value))
    return "NaN" if value != value else "+Inf" if value > 0 else "-Inf"


class Families:
    """Every family /metrics serves, made afresh per scrape, so each is present (maybe
    empty) on every scrape: a gauge per GAUGES row, and the step latency histogram."""

    def __init__(self) -> None:
        for attribute, name, documentation, labels in GAUGES:
            setattr(self, attribute, Gauge(f"pozol_{name}", documentation, labels))
        self.steps = HistogramMetricFamily(
            "pozol_step_duration_seconds", "Time a step of an operation ran, by kind and "
            "step.", labels=["kind", "step"])

    def gauges(self) -> list[Gauge]:
        return [value for value in vars(self).values() if isinstance(value, Gauge)]

    def all(self) -> list[Metric]:
        return [*(gauge.family() for gauge in self.gauges()), self.steps]

    def text(self) -> bytes:
        """The Prometheus text format (version 0.0.4) of every family."""
        escaped: dict[str, str] = {}
        parts = [line for gauge in self.gauges() for line in gauge.lines(escaped)]
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Fixed([self.steps]))
        return "".join(parts).encode() + generate_latest(registry)


class _Fixed(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


class FleetCollector(Collector):
    """Built per scrape, reading the database as it is now: the whole fleet, or one
    shard of it (Shard)."""

    def __init__(self, now: datetime | None = None, shard: Shard = WHOLE) -> None:
        self.now = now or timezone.now()
        self.shard = shard

    def families(self) -> Families:
        families = Families()
        names = self._hosts(families)
        self._samples(families, names)
        self._collector_state(families, names)
        self._pools_without_samples(families, names)
        self._links(families, names)
        if self.shard.index == 0:
            self._operations(families)
            self._redis(families)
        return families

    def collect(self) -> Iterator[Metric]:
        yield from self.families().all()

    def text(self) -> bytes:
        """The Prometheus text format, written by Families.text (what /metrics serves).

        Without the cyclic garbage collector meanwhile: a big scrape makes hundreds of
        thousands of small objects (rows, tuples, lines), none of them in a cycle, and
        the collector would walk them again and again (a fifth of the time measured)."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self.families().text()
        finally:
            if enabled:
                gc.enable()

    # -- per host --------------------------------------------------------------------

    def _hosts(self, families: Families) -> dict[int, str]:
        newest = (Snapshot.objects.filter(host=OuterRef("pk"), created_at__isnull=False)
                  .order_by("-created_at").values("created_at")[:1])
        rows = self.shard.filter(Host.objects, "pk").annotate(
            newest_snapshot=Subquery(newest)).values_list(
            "pk", "name", "reachable", "newest_snapshot")
        names = {}
        for pk, name, reachable, newest_snapshot in rows:
            names[pk] = name
            families.reachable.add_metric([name], 1.0 if reachable else 0.0)
            if newest_snapshot is not None:
                families.snapshot_age.add_metric([name], self._age(newest_snapshot))
        return names

    def _samples(self, families: Families, names: dict[int, str]) -> None:
        self.sampled: set[int] = set()
        for host_id, current, newest in _newest_samples(self.now - self._stale(),
                                                        self.shard):
            name = names.get(host_id)
            if name is None:
                continue
            try:
                _add_sample(families, name, _json(newest))
                _add_rates(families, name, *current)
                self.sampled.add(host_id)
            except (TypeError, ValueError, KeyError, AttributeError):
                # A row this code cannot read must not cost the others their scrape.
                logger.exception("/metrics: host %s's newest sample is unreadable", name)

    def _collector_state(self, families: Families, names: dict[int, str]) -> None:
        rows = self.shard.filter(HostTelemetry.objects, "host_id").values_list(
            "host_id", "last_sample_at", "last_duration", "last_error")
        for host_id, sample_at, duration, error in rows:
            name = names.get(host_id)
            if name is None:
                continue
            if sample_at is not None:
                families.sample_age.add_metric([name], self._age(sample_at))
            if duration is not None:
                families.sample_duration.add_metric([name], duration)
            families.sample_failing.add_metric([name], 1.0 if error else 0.0)
        # Pool health is text: the whole last sample keeps it (raw rows hold numbers).
        for host_id, pools, healths in _sampled_pool_health(self.shard):
            name = names.get(host_id)
            if name is None or host_id not in self.sampled:
                continue
            for pool, health in zip(pools, healths, strict=False):
                _add_health(families, name, pool, health)

    def _pools_without_samples(self, families: Families, names: dict[int, str]) -> None:
        """Hosts with no current sample: what discovery last saw of their pools."""
        # Sampled hosts are left out here, not in the query: their ids would be a
        # parameter list as long as the fleet.
        rows = self.shard.filter(Pool.objects, "host_id").values_list(
            "host_id", "name", "health", "capacity", "allocated", "size")
        for host_id, pool, health, capacity, allocated, size in rows:
            name = names.get(host_id)
            if name is None or host_id in self.sampled:
                continue
            _add_pool(families, name, pool, {"capacity": capacity, "allocated": allocated,
                                             "size": size})
            _add_health(families, name, pool, health)

    def _links(self, families: Families, names: dict[int, str]) -> None:
        worst: dict[int, float] = {}
        links = self.shard.filter(ReplicationLink.objects, "source_host_id")
        for source, received_at, created_at in links.values_list(
                "source_host_id", "newest_received_at", "created_at"):
            since = received_at or created_at
            worst[source] = max(worst.get(source, 0.0), self._age(since))
        for host_id, lag in worst.items():
            if host_id in names:
                families.replication_lag.add_metric([names[host_id]], lag)

    # -- the control plane's own -----------------------------------------------------

    def _operations(self, families: Families) -> None:
        counts = dict.fromkeys(Operation.Status.values, 0)
        for status, count in (Operation.objects.order_by().values_list("status")
                              .annotate(n=Count("pk"))):
            counts[status] = count
        for status, count in counts.items():
            families.operations.add_metric([status], count)
        for kind, status, count in (Operation.objects.filter(status__in=Operation.ACTIVE)
                                    .order_by().values_list("kind", "status")
                                    .annotate(n=Count("pk"))):
            families.active.add_metric([kind, status], count)

    def _redis(self, families: Families) -> None:
        queues = _queues()
        try:
            pipe = timing.client().pipeline(transaction=False)
            for queue in queues:
                pipe.llen(queue)
            pipe.hgetall(timing.KEY)
            *lengths, steps = pipe.execute()
        except redis.RedisError as error:
            logger.warning("/metrics: Redis did not answer: %s", error)
            families.redis_up.add_metric([], 0.0)
            return
        families.redis_up.add_metric([], 1.0)
        for queue, length in zip(queues, lengths, strict=True):
            families.queue.add_metric([queue], length)
        for step in timing.histograms(steps):
            families.steps.add_metric([step.kind, step.step], step.buckets, step.sum)

    # -- helpers ------------------------------------------------------------------------

    def _interval(self) -> timedelta:
        return timedelta(seconds=settings.POZOL["TELEMETRY_INTERVAL"])

    def _stale(self) -> timedelta:
        return STALE_INTERVALS * self._interval()

    def _age(self, moment: datetime) -> float:
        return max((self.now - moment).total_seconds(), 0.0)


def _queues() -> list[str]:
    """Celery's default queue, every queue a task is routed to by name, and every
    telemetry shard's (routed by the shard in the task's arguments)."""
    routes = settings.CELERY_TASK_ROUTES
    maps = [routes] if isinstance(routes, Mapping) else [r for r in routes
                                                         if isinstance(r, Mapping)]
    routed = {route["queue"] for mapping in maps for route in mapping.values()
              if "queue" in route}
    default = getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery")
    return sorted({default, *routed, *shards.queues()})


# -- the database reads ---------------------------------------------------------------

_NEWEST = """
    SELECT t.host_id, t.arc_hit_rate, t.tps, t.cache_hit_rate, newest."values"
    FROM telemetry_hosttelemetry t CROSS JOIN LATERAL (
        SELECT "values" - 'load' - 'dmu_tx' - 'uptime' AS "values"
        FROM telemetry_rawsample
        WHERE host_id = t.host_id AND taken_at = t.last_sample_at
        ORDER BY id DESC LIMIT 1) AS newest
    WHERE t.last_sample_at >= %s AND {shard}
"""


def _newest_samples(since: datetime, shard: Shard = WHOLE,
                    ) -> list[tuple[int, tuple[float | None, ...], object]]:
    """(host, (ARC hit, TPS, cache hit), its newest raw row's values) of each host
    sampled since `since`: one query, one index lookup a host."""
    condition, params = shard.sql("t.host_id")
    with connection.cursor() as cursor:
        cursor.execute(_NEWEST.format(shard=condition), [since, *params])
        return [(host_id, (arc_hit, tps, cache_hit), values)
                for host_id, arc_hit, tps, cache_hit, values in cursor.fetchall()]


_POOL_HEALTH = """
    SELECT host_id,
           jsonb_path_query_array(last_sample, '$.pools[*].name'),
           jsonb_path_query_array(last_sample, '$.pools[*].health')
    FROM telemetry_hosttelemetry WHERE last_sample IS NOT NULL AND {shard}
"""


def _sampled_pool_health(shard: Shard = WHOLE) -> list[tuple[int, list, list]]:
    """(host, pool names, healths) from each last sample, cut down in the database
    (the whole sample carries every pool's txg history)."""
    condition, params = shard.sql("host_id")
    with connection.cursor() as cursor:
        cursor.execute(_POOL_HEALTH.format(shard=condition), params)
        return [(host_id, _json(names), _json(healths))
                for host_id, names, healths in cursor.fetchall()]


def _json(value: object) -> object:
    import json

    return json.loads(value) if isinstance(value, str | bytes) else value


# -- one host's values ----------------------------------------------------------------

def _add_sample(families: Families, host: str, newest: dict) -> None:
    arc = newest.get("arc") or {}
    memory = newest.get("memory") or {}
    _add(families.arc_size, [host], arc.get("size"))
    _add(families.arc_max, [host], arc.get("c_max"))
    _add(families.dirty, [host], memory.get("dirty"))
    _add(families.writeback, [host], memory.get("writeback"))
    _add(families.available, [host], memory.get("available"))
    for pool, values in (newest.get("pools") or {}).items():
        _add_pool(families, host, pool, values)
        _add(families.pool_errors, [host, pool], values.get("checksum_errors"))
    for dataset, values in (newest.get("datasets") or {}).items():
        _add(families.compressratio, [host, dataset], values.get("compressratio"))
        _add(families.used, [host, dataset], values.get("used"))
        _add(families.logicalused, [host, dataset], values.get("logicalused"))
    clusters = newest.get("clusters") or {}
    if clusters:
        _add(families.connections, [host], _sum(c.get("connections") for c in clusters.values()))
        _add(families.xid_age, [host], _max(c.get("xid_age_max") for c in clusters.values()))


def _add_rates(families: Families, host: str, arc_hit: float | None, tps: float | None,
               cache_hit: float | None) -> None:
    """The rates over the interval before the newest sample, as the collector stored
    them: none after a gap (an average over a hole is not a current value)."""
    _add(families.arc_hit, [host], arc_hit)
    _add(families.tps, [host], tps)
    _add(families.cache_hit, [host], cache_hit)


def _add_pool(families: Families, host: str, pool: str, values: dict) -> None:
    capacity = values.get("capacity")
    _add(families.pool_capacity, [host, pool], capacity / 100 if capacity is not None else None)
    _add(families.pool_allocated, [host, pool], values.get("allocated"))
    _add(families.pool_size, [host, pool], values.get("size"))
    fragmentation = values.get("fragmentation")
    _add(families.pool_fragmentation, [host, pool],
         fragmentation / 100 if fragmentation is not None else None)


def _add_health(families: Families, host: str, pool: str, health: str | None) -> None:
    if not health:
        return
    families.pool_healthy.add_metric([host, pool], 1.0 if health == _HEALTHY else 0.0)
    families.pool_health.add_metric([host, pool, health], 1.0)


def _add(family: Gauge, labels: list[str], value: float | None) -> None:
    if value is not None:
        family.add_metric(labels, float(value))


def _sum(values) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _max(values) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None
