"""A telemetry sample: typed, frozen, raw counters as the host printed them.

None always means "not available on this host" or "not read this time" (the
Sample's `missing` says which, and why); it is never written as zero. Counters
stay raw (since boot, or since the server's statistics were reset): rates are
made from two samples by apps.telemetry.core.rates.

`Sample.to_dict()` is plain JSON-ready data (the time as ISO text) and
`Sample.from_dict()` types it again, so raw samples can be stored as they are.
Dicts inside a sample are not to be changed: a Sample is a value.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import datetime
from functools import cache
from typing import Any

from apps.remote.decode import decode
from apps.telemetry.core.pgstats import PgStats

NOT_AVAILABLE = "not available on this host"


@dataclass(frozen=True)
class Memory:
    """/proc/meminfo, in bytes."""

    total: int | None
    available: int | None
    free: int | None
    cached: int | None
    dirty: int | None
    writeback: int | None


@dataclass(frozen=True)
class Load:
    """/proc/loadavg."""

    load1: float
    load5: float
    load15: float
    running: int | None
    threads: int | None


@dataclass(frozen=True)
class Arc:
    """ARC counters (since the module loaded) and sizes, by arcstats field name."""

    hits: int | None
    misses: int | None
    iohits: int | None  # OpenZFS 2.2+: reads that waited on an I/O already in flight
    demand_data_hits: int | None
    demand_data_misses: int | None
    demand_data_iohits: int | None
    demand_metadata_hits: int | None
    demand_metadata_misses: int | None
    demand_metadata_iohits: int | None
    prefetch_data_hits: int | None
    prefetch_data_misses: int | None
    prefetch_data_iohits: int | None
    prefetch_metadata_hits: int | None
    prefetch_metadata_misses: int | None
    prefetch_metadata_iohits: int | None
    size: int | None
    c: int | None
    c_min: int | None
    c_max: int | None
    l2_hits: int | None
    l2_misses: int | None
    l2_size: int | None
    l2_asize: int | None  # OpenZFS only
    memory_throttle_count: int | None


@dataclass(frozen=True)
class DmuTx:
    """/proc/spl/kstat/zfs/dmu_tx (OpenZFS): how often writers waited, and why."""

    assigned: int | None
    delay: int | None
    error: int | None
    dirty_throttle: int | None  # the write throttle delayed a transaction
    dirty_delay: int | None
    dirty_over_max: int | None  # dirty data reached zfs_dirty_data_max
    dirty_frees_delay: int | None
    wrlog_delay: int | None  # 2.2+
    memory_reclaim: int | None
    quota: int | None


@dataclass(frozen=True)
class Txg:
    """One row of /proc/spl/kstat/zfs/<pool>/txgs; times in nanoseconds."""

    txg: int
    birth: int
    state: str  # O open, Q quiesced, W waiting for sync, S synced, C committed
    ndirty: int | None  # dirty bytes when its sync began (None on 0.6's nreserved layout)
    nread: int
    nwritten: int
    reads: int
    writes: int
    otime: int
    qtime: int
    wtime: int
    stime: int


@dataclass(frozen=True)
class Pool:
    name: str
    size: int | None
    allocated: int | None
    free: int | None
    capacity: int | None  # percent
    fragmentation: int | None  # percent
    health: str | None
    exact: bool  # False where sizes came rounded from human units (zfs-fuse)
    read_errors: int | None  # summed over every vdev of `zpool status`
    write_errors: int | None
    checksum_errors: int | None
    data_errors: int | None  # the `errors:` line: 0 for "No known data errors"
    scrub: Scrub | None
    txgs: tuple[Txg, ...] | None  # None: no txg history on this host


@dataclass(frozen=True)
class Scrub:
    state: str  # "none", "finished", "in progress", "canceled", "paused"
    ended: str | None  # ISO, the host's local time, for a finished scrub
    errors: int | None  # of a finished scrub


@dataclass(frozen=True)
class Dataset:
    name: str
    used: int | None
    logicalused: int | None  # OpenZFS only
    usedbysnapshots: int | None
    compressratio: float | None


@dataclass(frozen=True)
class Cluster:
    key: str  # the data directory
    stats: PgStats | None


@dataclass(frozen=True)
class Sample:
    taken_at: datetime  # the collector's clock when the answer arrived (aware)
    uptime: float | None  # seconds since the host booted
    memory: Memory | None
    load: Load | None
    arc: Arc | None
    dmu_tx: DmuTx | None
    pools: tuple[Pool, ...] | None
    datasets: tuple[Dataset, ...] | None
    clusters: tuple[Cluster, ...] = ()
    missing: dict[str, str] = field(default_factory=dict)  # source -> why it has no value

    def pool(self, name: str) -> Pool | None:
        return next((p for p in self.pools or () if p.name == name), None)

    def cluster(self, key: str) -> Cluster | None:
        return next((c for c in self.clusters if c.key == key), None)

    def to_dict(self) -> dict:
        """What dataclasses.asdict makes, without its deep copies: a collector round
        turns every host's sample into JSON (asdict took 1.3 ms a sample)."""
        data = _plain(self)
        data["taken_at"] = self.taken_at.isoformat()
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Sample:
        """What to_dict() made (through JSON or not); a missing field reads as unknown
        (apps.remote.decode)."""
        return decode(cls, data)


@cache
def _names(cls: type) -> tuple[str, ...] | None:
    return tuple(f.name for f in fields(cls)) if is_dataclass(cls) else None


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: object) -> Any:
    kind = type(value)
    if kind in _SCALARS:  # most values: one set lookup, not an isinstance of a union
        return value
    names = _names(kind)
    if names is not None:
        return {name: _plain(getattr(value, name)) for name in names}
    if isinstance(value, str | int | float):  # a subclass (an enum's value)
        return value
    if isinstance(value, list | tuple):
        return type(value)(_plain(item) for item in value)
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    return copy.deepcopy(value)
