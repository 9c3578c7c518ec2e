"""A cluster's WAL archive as a replication target holds it (issue 23): the moments a
point-in-time replay can reach there, from the target's copies of the cluster's
snapshots and the copy of the archive the link carried.

apps/replication records, per link, the carried archive's newest snapshot on the
target, what that snapshot holds (listed on the source around the moment it was taken:
apps.wal.core.commands.carry) and the `floor` (the oldest snapshot of the cluster on
the source at that run: an older one on the target may have lost the segments it
starts from to the source's retention; apps.wal.core.window says how such a snapshot
is still used). This module computes from those and the target's inventory; it reads
no host. The copy of the archive is never written on the target: a replay clones its
received snapshot (apps.clones' `Recovery.received`) and leaves the snapshot alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from apps.wal import recorded
from apps.wal.core import window as core
from apps.wal.core.segments import DEFAULT_SEGMENT_SIZE, BadWal, parse_lsn, segment_of
from apps.wal.models import RestorePoint
from apps.wal.services import WalRefused


@dataclass(frozen=True)
class Copy:
    """The archive's copy on a target and the cluster's datasets received beside it."""

    host_id: int
    data_dataset: str
    wal_dataset: str | None  # the received WAL dataset, when the cluster has its own
    archive: str  # the copy of the archive dataset
    snapshot: str  # its newest received snapshot (after '@'), which a replay clones
    listing: dict  # what that snapshot holds (recorded.stored_listing's form)
    floor: float | None  # epoch seconds; None: no snapshot of the cluster on the source
    # label -> the WAL position PoZoL marked on the source right after taking it (the
    # received copy is that snapshot): what an LSN moment picks a base by.
    marks: dict[str, str] = field(default_factory=dict)
    segment_size: int = DEFAULT_SEGMENT_SIZE

    def bases(self) -> list[core.Base]:
        labels = recorded.snapshots_on(self.host_id, self.data_dataset, self.wal_dataset)
        return [core.Base(name, at.timestamp(), recorded.lsn_of(self.marks.get(name)))
                for name, at in labels.items()]

    def window(self) -> list[core.Interval]:
        return core.window(self.bases(), recorded.from_stored(self.listing), self.floor,
                           recorded.last_in(self.listing))


def choose(copy: Copy, at: datetime | None = None, *, lsn: str | None = None,
           point: RestorePoint | None = None, now: datetime | None = None) -> core.Choice:
    """The newest received snapshot the copy of the archive replays from to a moment:
    a time (`at`, with its zone), an LSN, or a restore point the source's archive
    recorded (`point`). Refused (4xx, the target's window in the message) when none
    does, as apps.wal.services.choose refuses on the source."""
    field_name = "at" if at is not None else "lsn" if lsn is not None else "restore_point"
    if sum(x is not None for x in (at, lsn, point)) != 1:
        raise _refuse(field_name, "ask for one of a time, an LSN or a restore point")
    listing = recorded.from_stored(copy.listing)
    current = (now or timezone.now()).timestamp()
    try:
        if at is not None:
            if at.tzinfo is None:
                raise _refuse("at", "give the moment with its time zone")
            return core.for_time(at.timestamp(), current, copy.bases(), listing, copy.floor,
                                 recorded.last_in(copy.listing))
        if lsn is not None:
            return core.for_lsn(_position("lsn", lsn), copy.bases(), listing,
                                segment_size=copy.segment_size, floor=copy.floor)
        return _for_point(copy, point, listing, current)
    except core.Refusal as exc:
        raise _refuse(field_name, _with_window(copy, str(exc)), code=exc.code) from None


def _for_point(copy: Copy, point: RestorePoint, listing: list[core.Archived],
               now: float) -> core.Choice:
    """A restore point is served as its time (its own record stops the replay: no later
    transaction is needed), once the carried archive holds the segment it is in."""
    position = _position("restore_point", point.lsn)
    if not listing:
        raise core.Refusal("the link carried no archived segment yet", "not_carried")
    wanted = segment_of(position, listing[-1].segment.timeline, copy.segment_size)
    last = listing[-1].segment
    if wanted > last:
        raise _refuse("restore_point", _with_window(copy, (
            f"restore point {point.name} (at {point.lsn}) is in a segment the link has not "
            f"carried yet (the copy ends at {last.name(copy.segment_size)}): run the link "
            "again")), code="not_carried", status=409)
    choice = core.for_time(point.created_at.timestamp(), now, copy.bases(), listing,
                           copy.floor)
    if choice.reach.end < wanted:
        raise core.Refusal(f"the copy misses WAL between @{choice.reach.base.label} and "
                           f"restore point {point.name}", "gap")
    return choice


def _position(field_name: str, text: str) -> int:
    try:
        return parse_lsn(text or "")
    except BadWal as exc:
        raise _refuse(field_name, str(exc)) from None


def _with_window(copy: Copy, text: str) -> str:
    text = f"on the replication target, {text}"
    if "recoverable window" in text or "no snapshot has archived WAL" in text:
        return text
    return f"{text}; the target's recoverable window is {core.describe(copy.window())}"


def _refuse(field_name: str, text: str, *, code: str = "invalid",
            status: int = 400) -> WalRefused:
    return WalRefused(f"{field_name}: {text}", fields={field_name: [text]}, code=code,
                      status=status)
