"""A host's values now, from its last two samples, for the fleet overview.

The overview shows every host's ARC hit rate, TPS, fullest pool and space
saved by compression, sorted worst first on demand, at 200 hosts in one
query: so these are worked out once per sample (HostTelemetry's columns),
never per page. /metrics serves the same rates (and the worst cluster's cache
hit) from those columns, never working them out again per scrape. `recent`
keeps the last hour's ARC hit rate and TPS for the overview's sparklines, also
in the host's one row.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.telemetry.core.metrics import space_saved
from apps.telemetry.core.rates import Rates
from apps.telemetry.core.sample import Sample

RECENT_POINTS = 60  # an hour at the default 60 s interval
SPARKLINED = ("arc_hit_rate", "tps")


@dataclass(frozen=True)
class Current:
    arc_hit_rate: float | None  # 0..1, over the last interval
    tps: float | None  # summed over the host's clusters
    capacity: int | None  # the fullest pool's, percent
    used: int | None  # bytes on disk, summed over the pools' root datasets
    space_saved: int | None  # bytes compression saves there
    cache_hit_rate: float | None = None  # 0..1, the host's worst cluster's


def current(interval_rates: Rates, sample: Sample) -> Current:
    """The host's values at `sample`, with `interval_rates` (rates() from the sample
    before it): rates unknown, not 0, after a gap or a reboot."""
    usable = interval_rates.seconds and not interval_rates.gap
    arc = interval_rates.arc.hit_ratio if usable and interval_rates.arc else None
    per_cluster = [r.tps for r in interval_rates.clusters.values() if r.tps is not None]
    tps = sum(per_cluster) if usable and per_cluster else None
    cache_hits = [r.cache_hit_ratio for r in interval_rates.clusters.values()
                  if r.cache_hit_ratio is not None]
    capacities = [p.capacity for p in sample.pools or () if p.capacity is not None]
    roots = [d for d in sample.datasets or () if "/" not in d.name]
    used = [d.used for d in roots if d.used is not None]
    saved = [s for d in roots if (s := space_saved(vars(d))) is not None]
    return Current(arc_hit_rate=arc, tps=tps, capacity=max(capacities, default=None),
                   used=sum(used) if used else None,
                   space_saved=int(sum(saved)) if saved else None,
                   cache_hit_rate=min(cache_hits) if usable and cache_hits else None)


def remember(recent: dict | None, at: float, now: Current,
             keep: int = RECENT_POINTS) -> dict:
    """`recent` with this sample's values appended (unix seconds in "t"), the oldest
    dropped beyond `keep` points. Gaps stay as None: the sparkline breaks there."""
    recent = recent if isinstance(recent, dict) else {}
    updated = {"t": [*(recent.get("t") or []), round(at)][-keep:]}
    for name in SPARKLINED:
        values = [*(recent.get(name) or []), getattr(now, name)][-keep:]
        updated[name] = [None if v is None else round(v, 4) for v in values]
    return updated
