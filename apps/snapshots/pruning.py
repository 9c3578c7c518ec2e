"""A policy's pruning fed from the inventory: its rows (or a fresh listing's) as the core's
SnapshotInfo, and the prune plan over a host's listing.

Below both the policies (the tick and the preview read the inventory) and the
policy's prune step (it plans from a listing taken just before it destroys), so
neither imports the other for it; replication's target pruning reads rows the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from django.utils import timezone

from apps.fleet.models import Host
from apps.remote.facts.snapshots import SnapshotRow
from apps.snapshots.core import retention
from apps.snapshots.core.policy import Policy, SnapshotInfo
from apps.snapshots.models import Snapshot


def info_of_row(row: Snapshot | SnapshotRow) -> SnapshotInfo:
    if isinstance(row, Snapshot):
        created = row.created_at or row.seen_at
        dataset, name = row.dataset, row.name
    else:
        created = (datetime.fromtimestamp(row.creation, UTC) if row.creation is not None
                   else timezone.now())
        dataset, name = row.dataset, row.name
    return SnapshotInfo(full_name=f"{dataset}@{name}", created=created,
                        properties=dict(row.properties), userrefs=row.userrefs,
                        clones=tuple(row.clones))


def infos(host: Host, datasets: Iterable[str]) -> list[SnapshotInfo]:
    rows = Snapshot.objects.filter(host=host, dataset__in=list(datasets))
    return [info_of_row(row) for row in rows]


def prune_plan(policy: Policy, rows: Iterable[SnapshotRow], datasets: Iterable[str],
               now: datetime, protected: dict[str, str] | None = None
               ) -> retention.PrunePlan:
    wanted = set(datasets)
    return retention.plan_prune(policy, [info_of_row(r) for r in rows if r.dataset in wanted],
                                protected, now)
