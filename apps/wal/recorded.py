"""What the database recorded of a cluster's archive, read into the inputs of the pure
window code (apps/wal/core/window.py, which computes from them): its snapshots from the
inventory (on data and WAL alike, as a clone needs them), with the WAL position PoZoL
marked after each, and the archive's listing as the last check recorded it."""

from __future__ import annotations

from apps.snapshots.models import Snapshot
from apps.wal.core.segments import Segment, parse_lsn
from apps.wal.core.window import Archived, Base, Interval, LastTransaction
from apps.wal.models import WalArchive


def bases(archive: WalArchive) -> list[Base]:
    """The cluster's snapshots present on its data dataset and (if separate) its WAL's."""
    cluster = archive.cluster
    if cluster.data_dataset is None:
        return []
    wal = (cluster.wal_dataset.name if cluster.wal_dataset_id
           and cluster.wal_dataset_id != cluster.data_dataset_id else None)
    labels = snapshots_on(cluster.host_id, cluster.data_dataset.name, wal)
    marks = dict(archive.marks.filter(snapshot__in=list(labels)).values_list("snapshot", "lsn"))
    return [Base(name, at.timestamp(), lsn_of(marks.get(name))) for name, at in labels.items()]


def snapshots_on(host_id: int, data: str, wal: str | None) -> dict:
    """label -> creation time of the snapshots of `data` also on `wal` (when given), as
    the host's inventory lists them: on a replication target, the received copies'."""
    rows = Snapshot.objects.filter(host_id=host_id, dataset=data, created_at__isnull=False)
    labels = dict(rows.values_list("name", "created_at"))
    if wal is not None:
        on_wal = set(Snapshot.objects.filter(host_id=host_id, dataset=wal,
                                             name__in=list(labels)).values_list("name",
                                                                               flat=True))
        labels = {name: at for name, at in labels.items() if name in on_wal}
    return labels


def lsn_of(text: str | None) -> int | None:
    """A mark's WAL position as a number; None when there is none (or it is unreadable)."""
    try:
        return parse_lsn(text) if text else None
    except ValueError:
        return None


def intervals(archive: WalArchive) -> list[Interval]:
    """The window the last check recorded."""
    return [Interval(float(since), float(until)) for since, until in archive.window or []]


def listing(archive: WalArchive) -> list[Archived]:
    """The segments the last check listed, by number."""
    return from_stored(archive.listing)


def from_stored(stored: dict | None) -> list[Archived]:
    """A listing in stored_listing's form, read back."""
    timeline = (stored or {}).get("timeline")
    return [Archived(Segment(timeline, number), at)
            for number, at in (stored or {}).get("segments", [])]


def last_transaction(archive: WalArchive) -> LastTransaction | None:
    """The newest transaction the last check found in the archive, if it found one."""
    return last_in(archive.listing)


def last_in(stored: dict | None) -> LastTransaction | None:
    """The newest transaction a listing in stored_listing's form names, if any."""
    found = (stored or {}).get("last_transaction")
    if not found:
        return None
    number, at = found
    return LastTransaction(Segment(stored["timeline"], number), at)


def stored_listing(timeline: int, archived: list[Archived],
                   last: LastTransaction | None = None) -> dict:
    stored: dict = {"timeline": timeline,
                    "segments": [[a.segment.number, a.at] for a in archived]}
    if last is not None and last.segment.timeline == timeline:
        stored["last_transaction"] = [last.segment.number, last.at]
    return stored
