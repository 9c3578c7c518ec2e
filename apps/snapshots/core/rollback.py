"""What rolling a cluster back to one of its snapshots would do: pure, from a listing.

A cluster's snapshot is a pair (data and WAL of one moment, taken together). Rolling
back returns every dataset of the cluster to the snapshot of that name; `zfs rollback`
refuses while newer snapshots exist, and `-r` destroys them, so the plan names them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Listed:
    dataset: str
    name: str
    creation: int | None  # epoch seconds

    @property
    def full_name(self) -> str:
        return f"{self.dataset}@{self.name}"


@dataclass(frozen=True)
class RollbackPlan:
    snapshots: tuple[str, ...]  # what each dataset returns to
    newer: tuple[str, ...]  # what `zfs rollback -r` would destroy, newest first
    missing: tuple[str, ...]  # datasets with no snapshot of that name


def plan_rollback(datasets: Iterable[str], name: str, listed: Iterable[Listed]) -> RollbackPlan:
    """The snapshots `datasets` return to and the newer ones in the way.

    ZFS records creation to the second: a snapshot made in the same second as the
    target counts as newer (refusing too much is safe; rolling back too far is not).
    """
    by_dataset: dict[str, list[Listed]] = {}
    for row in listed:
        by_dataset.setdefault(row.dataset, []).append(row)
    snapshots: list[str] = []
    newer: list[Listed] = []
    missing: list[str] = []
    for dataset in datasets:
        rows = by_dataset.get(dataset, [])
        target = next((row for row in rows if row.name == name), None)
        if target is None:
            missing.append(dataset)
            continue
        snapshots.append(target.full_name)
        newer += [row for row in rows if row.name != name and _not_older(row, target)]
    newer.sort(key=lambda row: (-(row.creation or 0), row.full_name))
    return RollbackPlan(tuple(snapshots), tuple(row.full_name for row in newer), tuple(missing))


def _not_older(row: Listed, target: Listed) -> bool:
    if row.creation is None or target.creation is None:
        return True  # unknown: assume it is in the way
    return row.creation >= target.creation
