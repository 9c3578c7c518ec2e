"""Snapshots as the inventory would give them, for the pure snapshot tests."""

from __future__ import annotations

from datetime import UTC, datetime

from apps.snapshots.core.policy import (
    OWNER,
    OWNER_PROPERTY,
    POLICY_PROPERTY,
    TAKEN_PROPERTY,
    TIMESTAMP_FORMAT,
    SnapshotInfo,
)

T0 = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)  # a Monday, midnight UTC


def ours(dataset: str, taken: datetime, policy: str = "p", name: str | None = None,
         userrefs: int = 0, clones: tuple[str, ...] = ()) -> SnapshotInfo:
    """A snapshot PoZoL took under `policy`; named as PoZoL names it unless told."""
    stamp = taken.strftime(TIMESTAMP_FORMAT)
    return SnapshotInfo(
        f"{dataset}@{name or f'pozol_{policy}_{stamp}'}", taken,
        {OWNER_PROPERTY: OWNER, POLICY_PROPERTY: policy, TAKEN_PROPERTY: stamp},
        userrefs, clones)


def hand_made(dataset: str, taken: datetime, name: str) -> SnapshotInfo:
    return SnapshotInfo(f"{dataset}@{name}", taken)


def on_demand(dataset: str, taken: datetime, name: str) -> SnapshotInfo:
    """Taken by PoZoL's "snapshot now", under no policy."""
    return SnapshotInfo(f"{dataset}@{name}", taken, {OWNER_PROPERTY: OWNER})
