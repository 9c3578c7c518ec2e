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

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from apps.wal import recorded
from apps.wal.core import window as core
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

    def bases(self) -> list[core.Base]:
        labels = recorded.snapshots_on(self.host_id, self.data_dataset, self.wal_dataset)
        return [core.Base(name, at.timestamp()) for name, at in labels.items()]

    def window(self) -> list[core.Interval]:
        return core.window(self.bases(), recorded.from_stored(self.listing), self.floor,
                           recorded.last_in(self.listing))


def choose(copy: Copy, at: datetime, *, now: datetime | None = None) -> core.Choice:
    """The newest received snapshot the copy of the archive replays to `at` from; refused
    (400, the target's window in the message) when none does."""
    if at.tzinfo is None:
        raise WalRefused("at: give the moment with its time zone", code="invalid",
                         fields={"at": ["give the moment with its time zone"]})
    try:
        return core.for_time(at.timestamp(), (now or timezone.now()).timestamp(),
                             copy.bases(), recorded.from_stored(copy.listing), copy.floor,
                             recorded.last_in(copy.listing))
    except core.Refusal as exc:
        text = f"on the replication target, {exc}"
        raise WalRefused(f"at: {text}", fields={"at": [text]}, code=exc.code) from None
