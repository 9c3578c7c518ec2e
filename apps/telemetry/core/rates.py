"""Two consecutive samples -> rates and ratios over the interval between them.

Counters are stored raw (since boot, or since the server's statistics were
last reset); what a graph shows is made here:

- the interval is the collector's clock between the two answers, so a missed
  sample only makes the interval longer (the rate is its average over it);
  `gap` tells the graph that samples were missed, to draw a gap, not a line;
- a counter that went down was reset (a reboot, a module reload,
  pg_stat_reset, a crash): that interval is unknown (None), never a negative
  spike; so is every kernel and ZFS rate when the host rebooted in between
  (its boot time, taken_at - uptime, moved), even if a counter happens to be
  higher again;
- the first sample has no rates (`reason` says so);
- a ratio with nothing in its denominator (no ARC reads, no block reads) is
  unknown, not 0 % or 100 %.

ARC hit ratio as arcstat computes it (openzfs/zfs cmd/arcstat.in calculate(),
host-formats.md 1.3): hits / (hits + iohits + misses) over the interval where
the host has iohits (2.2+), hits / (hits + misses) where it has not; chosen by
which counters both samples carry, never by version. Demand and prefetch
ratios likewise from their own splits. PostgreSQL: TPS = (xact_commit +
xact_rollback) per second; cache hit = blks_hit / (blks_hit + blks_read); WAL
bytes per second from pg_stat_wal.wal_bytes (14+) or else from the WAL
position, which no statistics reset or crash touches (captured on the test
host: after `pg_ctl restart -m immediate` xact_commit fell from 5512 to 1,
the position kept growing).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import timedelta

from apps.telemetry.core.pgstats import PgStats
from apps.telemetry.core.sample import Arc, DmuTx, Pool, Sample, Txg

# How far the host's boot time (taken_at - uptime) may wander before it counts
# as a reboot: taken_at is when the answer arrived, which a slow command moves.
BOOT_SLACK = timedelta(seconds=30)
GAP_FACTOR = 1.5  # an interval longer than this many expected ones missed a sample

FIRST = "first sample: no earlier one to compare with"
CLOCK = "the collector's clock did not move forward between the samples"
REBOOT = "the host rebooted between the samples: its counters started again"


@dataclass(frozen=True)
class ArcRates:
    reads_per_second: float | None
    hit_ratio: float | None  # 0..1
    iohit_ratio: float | None  # 2.2+
    demand_hit_ratio: float | None
    demand_data_hit_ratio: float | None
    demand_metadata_hit_ratio: float | None
    prefetch_hit_ratio: float | None
    l2_hit_ratio: float | None
    formula: str  # "hits/(hits+iohits+misses)" or "hits/(hits+misses)"


@dataclass(frozen=True)
class ThrottleRates:
    """dmu_tx counters per second: how often writers waited on dirty data."""

    assigned_per_second: float | None
    dirty_throttle_per_second: float | None
    dirty_delay_per_second: float | None
    dirty_over_max_per_second: float | None


@dataclass(frozen=True)
class TxgRates:
    """The txgs committed in the interval, from the pool's txg history."""

    synced: int
    written_per_second: float | None  # None unless the history covers the whole interval
    sync_ms_max: float | None
    sync_ms_avg: float | None
    dirty_max: int | None  # bytes the fullest txg carried into its sync
    complete: bool  # False: older txgs of the interval had left the history


@dataclass(frozen=True)
class PoolRates:
    name: str
    new_read_errors: int | None
    new_write_errors: int | None
    new_checksum_errors: int | None
    txgs: TxgRates | None


@dataclass(frozen=True)
class PgRates:
    key: str
    tps: float | None
    commits_per_second: float | None
    rollbacks_per_second: float | None
    cache_hit_ratio: float | None
    wal_bytes_per_second: float | None
    checkpoints_timed: int | None  # in the interval
    checkpoints_requested: int | None
    checkpoint_write_ms: float | None  # spent in the interval
    checkpoint_sync_ms: float | None
    inserts_per_second: float | None
    updates_per_second: float | None
    deletes_per_second: float | None
    temp_bytes_per_second: float | None


@dataclass(frozen=True)
class Rates:
    seconds: float | None  # the interval; None when there is none
    gap: bool  # samples were missed in between
    reason: str | None  # why every rate is unknown, when one reason covers them all
    arc: ArcRates | None = None
    throttle: ThrottleRates | None = None
    pools: tuple[PoolRates, ...] = ()
    clusters: dict[str, PgRates] = field(default_factory=dict)  # by cluster key


def rates(previous: Sample | None, current: Sample,
          expected_interval: timedelta | None = None) -> Rates:
    if previous is None:
        return Rates(None, False, FIRST)
    seconds = (current.taken_at - previous.taken_at).total_seconds()
    if seconds <= 0:
        return Rates(None, False, CLOCK)
    gap = expected_interval is not None and seconds > (
        GAP_FACTOR * expected_interval.total_seconds())
    clusters = {
        cluster.key: pg_rates(cluster.key, before.stats, cluster.stats, seconds)
        for cluster in current.clusters
        if (before := previous.cluster(cluster.key)) and before.stats and cluster.stats}
    if rebooted(previous, current):
        return Rates(seconds, gap, REBOOT, clusters=clusters)
    return Rates(
        seconds, gap, None,
        arc=arc_rates(previous.arc, current.arc, seconds)
        if previous.arc and current.arc else None,
        throttle=throttle_rates(previous.dmu_tx, current.dmu_tx, seconds)
        if previous.dmu_tx and current.dmu_tx else None,
        pools=tuple(pool_rates(before, pool, seconds) for pool in current.pools or ()
                    if (before := previous.pool(pool.name))),
        clusters=clusters,
    )


def rebooted(previous: Sample, current: Sample) -> bool:
    if previous.uptime is None or current.uptime is None:
        return False  # nothing tells; counters going down still mark resets one by one
    if current.uptime < previous.uptime:
        return True
    boot_before = previous.taken_at - timedelta(seconds=previous.uptime)
    boot_now = current.taken_at - timedelta(seconds=current.uptime)
    return boot_now - boot_before > BOOT_SLACK


# -- building blocks ---------------------------------------------------------------------

def delta(before: float | None, after: float | None) -> float | None:
    """How much a counter grew; None when either is unknown or it went down (a reset)."""
    if before is None or after is None or after < before:
        return None
    return after - before


def per_second(before: float | None, after: float | None, seconds: float) -> float | None:
    grown = delta(before, after)
    return None if grown is None else grown / seconds


def ratio(part: float | None, parts: Iterable[float | None]) -> float | None:
    """part / sum(parts); unknown when any is unknown or there was nothing at all."""
    values = list(parts)
    if part is None or any(v is None for v in values):
        return None
    total = sum(values)  # type: ignore[arg-type]
    return part / total if total > 0 else None


# -- ARC -----------------------------------------------------------------------------------

def arc_rates(before: Arc, after: Arc, seconds: float) -> ArcRates:
    def d(name: str) -> float | None:
        return delta(getattr(before, name), getattr(after, name))

    with_io = before.iohits is not None and after.iohits is not None

    def split_ratio(*prefixes: str) -> float | None:
        hits = [d(f"{p}_hits") for p in prefixes]
        kinds = ("hits", "iohits", "misses") if with_io else ("hits", "misses")
        every = [d(f"{p}_{kind}") for p in prefixes for kind in kinds]
        return ratio(None if None in hits else sum(hits), every)  # type: ignore[arg-type]

    hits, misses = d("hits"), d("misses")
    iohits = d("iohits") if with_io else 0.0
    accesses = [hits, iohits, misses]
    reads = None if None in accesses else sum(accesses)  # type: ignore[arg-type]
    return ArcRates(
        reads_per_second=None if reads is None else reads / seconds,
        hit_ratio=ratio(hits, accesses),
        iohit_ratio=ratio(iohits, accesses) if with_io else None,
        demand_hit_ratio=split_ratio("demand_data", "demand_metadata"),
        demand_data_hit_ratio=split_ratio("demand_data"),
        demand_metadata_hit_ratio=split_ratio("demand_metadata"),
        prefetch_hit_ratio=split_ratio("prefetch_data", "prefetch_metadata"),
        l2_hit_ratio=ratio(d("l2_hits"), [d("l2_hits"), d("l2_misses")]),
        formula="hits/(hits+iohits+misses)" if with_io else "hits/(hits+misses)",
    )


def throttle_rates(before: DmuTx, after: DmuTx, seconds: float) -> ThrottleRates:
    def rate(name: str) -> float | None:
        return per_second(getattr(before, name), getattr(after, name), seconds)

    return ThrottleRates(rate("assigned"), rate("dirty_throttle"), rate("dirty_delay"),
                         rate("dirty_over_max"))


# -- pools ---------------------------------------------------------------------------------

def pool_rates(before: Pool, after: Pool, seconds: float) -> PoolRates:
    return PoolRates(
        name=after.name,
        new_read_errors=_int(delta(before.read_errors, after.read_errors)),
        new_write_errors=_int(delta(before.write_errors, after.write_errors)),
        new_checksum_errors=_int(delta(before.checksum_errors, after.checksum_errors)),
        txgs=txg_rates(before.txgs, after.txgs, seconds)
        if before.txgs is not None and after.txgs is not None else None,
    )


def txg_rates(before: tuple[Txg, ...], after: tuple[Txg, ...], seconds: float) -> TxgRates | None:
    last, newest = _last_committed(before), _last_committed(after)
    if last is None or (newest is not None and newest < last):
        return None  # no history before, or txg numbers went back (another import)
    committed = [t for t in after if t.state == "C" and t.txg > last]
    # The history keeps the last zfs_txg_history txgs (100): a long interval outruns it.
    complete = not committed or min(t.txg for t in committed) == last + 1
    dirty = [t.ndirty for t in committed if t.ndirty is not None]
    sync_ms = [t.stime / 1e6 for t in committed]
    return TxgRates(
        synced=len(committed),
        written_per_second=sum(t.nwritten for t in committed) / seconds if complete else None,
        sync_ms_max=max(sync_ms) if sync_ms else None,
        sync_ms_avg=sum(sync_ms) / len(sync_ms) if sync_ms else None,
        dirty_max=max(dirty) if dirty else None,
        complete=complete,
    )


def _last_committed(txgs: tuple[Txg, ...]) -> int | None:
    return max((t.txg for t in txgs if t.state == "C"), default=None)


def as_before(sample: Sample) -> Sample:
    """`sample` as the next round needs it for rates(): each pool's txg history cut to
    its last committed txg, the only one txg_rates reads of the history before. A host
    keeps zfs_txg_history rows a pool (100 by default), about 20 KB of JSON that every
    round would otherwise write to the host's state row, and a restart read back."""
    if not sample.pools or all(p.txgs is None for p in sample.pools):
        return sample
    return replace(sample, pools=tuple(
        pool if pool.txgs is None else replace(pool, txgs=_last_committed_only(pool.txgs))
        for pool in sample.pools))


def _last_committed_only(txgs: tuple[Txg, ...]) -> tuple[Txg, ...]:
    committed = [t for t in txgs if t.state == "C"]
    return (max(committed, key=lambda t: t.txg),) if committed else ()


# -- PostgreSQL ------------------------------------------------------------------------------

def pg_rates(key: str, before: PgStats, after: PgStats, seconds: float) -> PgRates:
    def rate(name: str) -> float | None:
        return per_second(getattr(before, name), getattr(after, name), seconds)

    def grown(name: str) -> float | None:
        return delta(getattr(before, name), getattr(after, name))

    commits, rollbacks = grown("xact_commit"), grown("xact_rollback")
    wal = rate("wal_bytes")
    if wal is None:  # before 14, or pg_stat_wal was reset (a crash): the position still moves
        wal = rate("wal_position")
    return PgRates(
        key=key,
        tps=None if commits is None or rollbacks is None else (commits + rollbacks) / seconds,
        commits_per_second=rate("xact_commit"),
        rollbacks_per_second=rate("xact_rollback"),
        cache_hit_ratio=ratio(grown("blks_hit"), [grown("blks_hit"), grown("blks_read")]),
        wal_bytes_per_second=wal,
        checkpoints_timed=_int(grown("checkpoints_timed")),
        checkpoints_requested=_int(grown("checkpoints_requested")),
        checkpoint_write_ms=grown("checkpoint_write_ms"),
        checkpoint_sync_ms=grown("checkpoint_sync_ms"),
        inserts_per_second=rate("tup_inserted"),
        updates_per_second=rate("tup_updated"),
        deletes_per_second=rate("tup_deleted"),
        temp_bytes_per_second=rate("temp_bytes"),
    )


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)
