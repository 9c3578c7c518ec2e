"""Reading an archive and recording what it holds: what the `wal.tick` does without an
Operation, and what the `wal.check` operation does when something must go.

The read is one round trip, read-only (pg_stat_archiver and the listing). What it
found is recorded on the archive's row (the listing, the gaps, the window) and in the
host's `wal_archive` alert. Removing what no snapshot needs changes the host, so the
tick never does it: it starts a `wal.check` Operation instead, whose log names every
segment file and snapshot removed.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from apps.remote import ssh
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import InvalidValue
from apps.remote.errors import RemoteError
from apps.remote.shell import Runner
from apps.snapshots.models import Snapshot
from apps.wal import alerting, recorded
from apps.wal.core import commands
from apps.wal.core.plan import PITR_PREFIX, archive_command
from apps.wal.core.window import Archived, describe, gaps, ordered, removable, window
from apps.wal.models import WalArchive

logger = logging.getLogger("pozol.wal")

READ_TIMEOUT = 60
THREADS = 8  # archives read at once: a host that does not answer holds one thread

# A point-in-time clone's creation (one script, at most 300 s) snapshots the archive as
# `@pozol-pitr-<clone>` and destroys that snapshot once replayed, or its destroy does.
# One older than this was left by a clone the orphan reconciler removed: it only pins
# WAL retention has removed. Not one the inventory says is cloned: an archive clone
# still reads it (a replay whose clean-up found the mount busy) and the clone's destroy
# takes both; trying it anyway would start a failing check every tick.
STALE_REPLAY = timedelta(minutes=15)


@dataclass(frozen=True)
class Found:
    """One read of an archive and what retention would take from it."""

    status: commands.Status
    segments: list[Archived]  # the current timeline's, by number
    going: list[Archived]  # those no kept snapshot needs
    stale_replays: list[Snapshot]

    @property
    def to_remove(self) -> bool:
        return bool(self.going or self.stale_replays)


def read(archive: WalArchive, run: Runner) -> commands.Status:
    return _read(archive.cluster.target(), archive.dataset, run)


def _read(target: ClusterTarget, dataset: str, run: Runner) -> commands.Status:
    return commands.parse_status(run(commands.status(target, dataset),
                                     timeout=READ_TIMEOUT).stdout)


def assess(archive: WalArchive, status: commands.Status) -> Found:
    segments = ordered(status.archived, status.timeline)
    stale = list(Snapshot.objects.filter(
        host=archive.cluster.host, dataset=archive.dataset, name__startswith=PITR_PREFIX,
        created_at__lt=timezone.now() - STALE_REPLAY, clones=[]))
    return Found(status, segments, removable(recorded.bases(archive), segments), stale)


def not_mounted(archive: WalArchive) -> str:
    """Record an archive whose dataset is not mounted (nothing in it is trusted)."""
    error = (f"the archive {archive.dataset} is not mounted: the directory under it is not "
             "the archive, and no clone reads it; PoZoL's archive command refuses it and "
             "fails until it is mounted (zfs mount it)")
    WalArchive.objects.filter(pk=archive.pk).update(checked_at=timezone.now(), error=error,
                                                    read_error="",
                                                    window=[], listing={})
    alerting.update(archive.cluster.host)
    return error


def record(archive: WalArchive, found: Found, *, removed: int = 0) -> str:
    """What the archive holds after `removed` of `found.going` went: the row and the alert.
    Returns the window, described."""
    status = found.status
    size = status.archiver.segment_size
    kept = found.segments[removed:]
    missing = gaps(kept)
    last = status.last_transaction
    spans = window(recorded.bases(archive), kept, last=last)
    archiver = status.archiver
    failure = status.failure_reason()
    WalArchive.objects.filter(pk=archive.pk).update(
        checked_at=timezone.now(), archived_count=archiver.archived_count,
        failed_count=archiver.failed_count, last_archived_wal=archiver.last_archived_wal,
        last_archived_at=_when(archiver.last_archived_at),
        last_failed_wal=archiver.last_failed_wal, last_failed_at=_when(archiver.last_failed_at),
        current_wal=archiver.current_wal, lag_segments=status.lag_segments(),
        segment_size=size, space_used=status.used, space_available=status.available,
        failure_reason=failure.reason if failure else "",
        failure_reason_wal=failure.wal if failure else "",
        failure_reason_at=_when(failure.at) if failure else None,
        command_outdated=outdated_command(archive, status),
        segments=len(kept),
        first_segment=kept[0].segment.name(size) if kept else "",
        last_segment=kept[-1].segment.name(size) if kept else "",
        gaps=[{"first": g.first.name(size), "last": g.last.name(size), "after": g.after}
              for g in missing],
        window=[[s.since, s.until] for s in spans], error="", read_error="",
        listing=recorded.stored_listing(status.timeline, kept, last),
        removed=archive.removed + removed)
    alerting.update(archive.cluster.host)
    return describe(spans)


def outdated_command(archive: WalArchive, status: commands.Status) -> bool:
    """Whether an archive that is on archives with another command than the one PoZoL
    writes for it now; unknown (not read) counts as not. One in a directory PoZoL
    would not archive into now (an older release's, longer than PostgreSQL 15 keeps
    whole) is: its refresh then says why it cannot be."""
    if not (archive.state == WalArchive.State.ON and archive.directory
            and status.archive_command is not None):
        return False
    try:
        return status.archive_command != archive_command(archive.directory)
    except InvalidValue:
        return True


def _read_failed(archive: WalArchive, error: Exception) -> None:
    """Say on the archive that its routine read failed, and since when its record is."""
    since = (f"the read of {archive.checked_at:%Y-%m-%d %H:%M:%S} UTC"
             if archive.checked_at else "no read yet")
    WalArchive.objects.filter(pk=archive.pk).update(read_error=(
        f"the read at {timezone.now():%Y-%m-%d %H:%M:%S} UTC failed: {error}; what is "
        f"shown is from {since}")[:2000])


def _when(epoch: float | None) -> datetime | None:
    return datetime.fromtimestamp(epoch, UTC) if epoch is not None else None


def sweep(archives: list[WalArchive]) -> tuple[list[WalArchive], dict[str, str]]:
    """Read every archive (in threads: SSH and parsing only) and record each whose read
    leaves nothing to remove. Returns the archives that have something to remove (their
    check must be an Operation) and, by cluster, the reads that failed: logged, and the
    archive's window left as its last check recorded it (its checked_at says when)."""
    if not archives:
        return [], {}

    def take(job: tuple[ssh.Target, ClusterTarget, str]
             ) -> commands.Status | RemoteError | ValueError:
        where, target, dataset = job  # read here: threads never touch the database
        run = ssh.session(where, connect_timeout=settings.POZOL["SSH_CONNECT_TIMEOUT"])
        try:
            return _read(target, dataset, run)
        except (RemoteError, ValueError) as error:  # unreachable, or not the answer asked
            return error

    jobs = [(a.cluster.host.ssh_target(), a.cluster.target(), a.dataset) for a in archives]
    with ThreadPoolExecutor(min(THREADS, len(jobs)), thread_name_prefix="wal") as pool:
        answers = list(pool.map(take, jobs))
    pruning, failed = [], {}
    for archive, answer in zip(archives, answers, strict=True):
        where = f"{archive.cluster.host.name}:{archive.cluster.data_dir}"
        if isinstance(answer, Exception):
            failed[where] = str(answer)
            logger.warning("reading the WAL archive of %s failed: %s", where, answer)
            _read_failed(archive, answer)
        elif not answer.mounted:
            not_mounted(archive)
        elif (found := assess(archive, answer)).to_remove:
            pruning.append(archive)
        else:
            record(archive, found)
    return pruning, failed
