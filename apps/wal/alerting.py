"""The host's `wal_archive` alert (apps/wal/alert_kinds.py), in one function (issue 23).

Open while an archive of the host has a gap (a missing segment: the window shrank) or
failed attempts newer than its last success; resolved once none has. pg_stat_archiver
counts failures but never says why (that is in the server log), so PoZoL's archive
command notes the reason of its last failure (apps/wal/core/plan.py) and the read
keeps it on the archive (`failure_reason`): the alert names it, with what it means
when it is one PoZoL knows (read-only, not mounted, permission, no space, a missing
directory, a segment archived with other content). The read also tells a full archive
by itself: the dataset's `available` below one segment, which a quota or a full pool
gives and which fails every copy until someone makes room (also for an archive command
from before the note).
"""

from __future__ import annotations

from apps.common.formatting import human_bytes
from apps.fleet.models import Host
from apps.wal.alert_kinds import WAL_ARCHIVE

KIND = WAL_ARCHIVE.name


def update(host: Host) -> None:
    from apps.wal.models import WalArchive

    found = []
    for archive in WalArchive.objects.filter(cluster__host=host, state=WalArchive.State.ON
                                             ).select_related("cluster"):
        where = archive.cluster.data_dir
        if archive.error:
            found.append(f"the WAL archive of {where}: {archive.error}")
        if archive.gaps:
            gap = archive.gaps[-1]
            found.append(f"the WAL archive of {where} misses {gap['first']}"
                         + (f" to {gap['last']}" if gap["last"] != gap["first"] else "")
                         + ": moments before it are recoverable only up to the gap")
        if archive.failed_count and archive.last_failed_at and (
                archive.last_archived_at is None
                or archive.last_failed_at > archive.last_archived_at):
            why = [w for w in (archive.failure_cause, _full(archive)) if w]
            found.append(f"archiving {where} fails: {archive.last_failed_wal} could not be "
                         f"archived ({archive.failed_count} failed attempts)"
                         + (": " + "; ".join(why) if why else ""))
    WAL_ARCHIVE.raise_or_resolve(host, "; ".join(found) if found else None)


def _full(archive) -> str:
    """Why the archiver fails, when the read can tell: no space left in the archive."""
    room, size = archive.space_available, archive.segment_size
    if room is None or not size or room >= size:
        return ""
    return (f"no space, {archive.dataset} has {human_bytes(room)} available, less than "
            f"one {human_bytes(size)} segment (raise its quota, or free its pool; "
            "PostgreSQL keeps the segments in pg_wal and retries)")
