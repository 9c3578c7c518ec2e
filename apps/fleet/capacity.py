"""When a pool is too full to be left alone, and what its snapshots hold there.

Pure (but for `threshold()`): discovery's facts in, the pool_capacity alert's text out (or None when
every pool is at or below the threshold). Snapshots are named because they
are what an operator can free without touching live data: the largest
`usedbysnapshots` (space only that dataset's snapshots hold) come first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from apps.common.formatting import human_bytes
from apps.remote.facts.host import Dataset, Pool

LARGEST = 3  # datasets named per pool; the sum covers them all

# Where the threshold comes from: the setting, unless an app that lets operators
# edit it (apps/alerts' pool_capacity rule) registers its reader at ready().
_threshold_source: Callable[[], float] | None = None


def set_threshold_source(source: Callable[[], float] | None) -> None:
    global _threshold_source
    _threshold_source = source


def threshold() -> float:
    """Percent: a pool fuller than this raises its host's pool_capacity alert."""
    from django.conf import settings

    return _threshold_source() if _threshold_source else settings.POZOL["POOL_CAPACITY_ALERT"]


def pool_capacity_message(pools: Iterable[Pool], datasets: Iterable[Dataset],
                          threshold: float) -> str | None:
    """"pool tank is 86% full; snapshots hold 412 MiB: tank/pg/data 380 MiB, ..." for
    each pool over `threshold` percent, or None. A pool whose capacity is not
    known is not called full."""
    datasets = list(datasets)
    full = [p for p in pools if p.capacity is not None and p.capacity > threshold]
    if not full:
        return None
    return "; ".join(_pool_text(pool, _in_pool(pool.name, datasets)) for pool in full)


def _in_pool(pool: str, datasets: list[Dataset]) -> list[Dataset]:
    return [d for d in datasets if d.name == pool or d.name.startswith(pool + "/")]


def _pool_text(pool: Pool, datasets: list[Dataset]) -> str:
    head = f"pool {pool.name} is {pool.capacity}% full"
    known = [d for d in datasets if d.usedbysnapshots is not None]
    if not known:
        return f"{head}; snapshot usage not known"
    total = sum(d.usedbysnapshots for d in known)
    largest = sorted((d for d in known if d.usedbysnapshots),
                     key=lambda d: (-d.usedbysnapshots, d.name))[:LARGEST]
    named = ", ".join(f"{d.name} {human_bytes(d.usedbysnapshots)}" for d in largest)
    return f"{head}; snapshots hold {human_bytes(total)}" + (f": {named}" if named else "")
