"""Lag: how old the newest snapshot that reached the target is, and when to alert.

The newest snapshot "that reached the target" of a cluster is the newest one
present on every target dataset (data and WAL together: a clone needs both),
by its creation on the source as received (ZFS keeps `creation` through send).
A link that never delivered anything has no lag: it is reported as never
replicated and alerts once it is older than the threshold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from apps.replication.core.link import ReplicationError
from apps.replication.core.planner import Snap, ordered

MIN_THRESHOLD = timedelta(minutes=1)
MAX_THRESHOLD = timedelta(days=366)


@dataclass(frozen=True)
class Lag:
    lag: timedelta | None  # None: nothing has reached the target yet
    newest: str | None  # the newest received snapshot's name
    alert: bool
    text: str


def newest_received(targets: Mapping[str, Sequence[Snap]]) -> Snap | None:
    """The newest snapshot whose name is on every target dataset given."""
    lists = [ordered(snaps) for snaps in targets.values()]
    if not lists:
        return None
    everywhere = set.intersection(*({s.name for s in snaps} for snaps in lists))
    common = [s for s in lists[0] if s.name in everywhere]
    return common[-1] if common else None


def lag(newest: Snap | None, now: datetime, threshold: timedelta,
        link_created: datetime | None = None) -> Lag:
    _check(now, threshold)
    if newest is None:
        waited = now - link_created if link_created else None
        late = waited is not None and waited > threshold
        return Lag(None, None, late, "never replicated" + (
            f" (the link is {_human(waited)} old)" if waited is not None else ""))
    behind = max(now - newest.created, timedelta(0))  # a fast source clock: not negative
    over = behind > threshold
    text = f"{_human(behind)} behind (@{newest.name})"
    if over:
        text += f", over the {_human(threshold)} threshold"
    return Lag(behind, newest.name, over, text)


def _check(now: datetime, threshold: timedelta) -> None:
    if now.tzinfo is None:
        raise ReplicationError("now", "now must be timezone-aware.")
    if not isinstance(threshold, timedelta) or not (
            MIN_THRESHOLD <= threshold <= MAX_THRESHOLD):
        raise ReplicationError("lag_threshold", "The lag threshold must be between one "
                                                "minute and a year.")


def _human(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}" + (
                f" {seconds % size // 60} min" if unit == "h" and seconds % size >= 60 else "")
    return f"{seconds} s"
