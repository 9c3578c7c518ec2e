"""What the archive lets a clone reach, which snapshot serves a moment, and what may go.

Pure: from the archive's listing (each segment and when it was archived: the file's
mtime, since the archive command copies it then) and the cluster's snapshots (their
creation time, and the WAL position read right after they were taken, when PoZoL
took them while archiving).

A snapshot S of a running cluster is a crash-consistent base backup. A clone of it
replays S's own pg_wal (crash recovery) and then asks the archive for what follows.
The segment being written at S (call it C) was archived after S; every segment
archived after S is C or later, or an earlier one that was archived late. So the
first segment archived after S (`start`; with whole-second times, in S's second or
later) is at or before C: keeping the archive from
`start` on keeps everything a clone of S reads from it. From S the archive reaches
every moment up to the archive time of the last segment of the unbroken run
starting at `start`; a missing segment (a gap) ends that run, and the moments past it
are reachable only from a snapshot taken after the gap.

A moment before S (or within S's second: ZFS keeps creation times in whole seconds)
is never replayed to from S: S's data files may already hold later changes, and
stopping the replay early would leave them inconsistent. So a moment is served by
the newest snapshot taken before it whose run reaches it. An LSN target needs a
snapshot whose own WAL position is known and not after it.

A replication target holds a copy of the archive as of the link's last run (apps/
replication carries it) and the target's own copies of the cluster's snapshots; the
window there is computed the same way, with one more care: retention on the source
removes the segments before the oldest source snapshot's start, so a target snapshot
older than every source snapshot at that run (`floor`) may have lost the segments it
starts from. Such a snapshot is a base only when the copy holds the segment just
before its start (then nothing it needs was removed).

Archive times assume the archiver keeps up (its lag below archive_timeout): where it
lags far behind and a segment is also missing, a claim made here can be too wide, and
then PostgreSQL itself refuses to promote a replay that ended before its target (the
clone fails; it is never a wrong copy).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from apps.wal.core.segments import DEFAULT_SEGMENT_SIZE, Segment, segment_of

# A snapshot's creation time is whole seconds: S happened within [created, created + 1).
CREATION_RESOLUTION = 1.0
# A file's mtime may be whole seconds too (zfs-fuse): a segment archived in the snapshot's
# second (or, with finer mtimes, just before it) counts as archived after it, which keeps
# one segment more, never one less.
MTIME_RESOLUTION = 1.0


def _after(archived: Archived, base_created: float) -> bool:
    """Whether the segment may have been archived after a snapshot made at base_created."""
    return archived.at + MTIME_RESOLUTION > base_created


@dataclass(frozen=True)
class Archived:
    segment: Segment
    at: float  # epoch seconds: when it was archived


@dataclass(frozen=True)
class Base:
    """A snapshot of the cluster (its label after '@') as a base for replay."""

    label: str
    created: float  # epoch seconds, as ZFS keeps it
    lsn: int | None = None  # the WAL position read right after it was taken, if known


@dataclass(frozen=True)
class LastTransaction:
    """The newest commit or abort the archive holds: where, and when it committed."""

    segment: Segment
    at: float


@dataclass(frozen=True)
class Reach:
    base: Base
    start: Segment  # the first segment archived after the snapshot
    end: Segment  # the last of the unbroken run from start
    since: float  # the earliest moment a replay from the base may stop at
    until: float  # the latest moment the archive holds

    def holds(self, moment: float) -> bool:
        return self.since <= moment <= self.until


@dataclass(frozen=True)
class Gap:
    first: Segment  # the first missing segment
    last: Segment  # the last missing one
    after: float  # when the segment before it was archived

    def names(self, segment_size: int = DEFAULT_SEGMENT_SIZE) -> str:
        if self.first == self.last:
            return self.first.name(segment_size)
        return f"{self.first.name(segment_size)} to {self.last.name(segment_size)}"


@dataclass(frozen=True)
class Interval:
    since: float
    until: float


def ordered(archived: list[Archived], timeline: int) -> list[Archived]:
    """The current timeline's segments, by number (another timeline's are not replayed)."""
    return sorted((a for a in archived if a.segment.timeline == timeline),
                  key=lambda a: a.segment.number)


def gaps(archived: list[Archived]) -> list[Gap]:
    """Missing numbers between two archived segments (`archived` as `ordered` gives it)."""
    found = []
    for before, after in zip(archived, archived[1:], strict=False):
        if after.segment.number > before.segment.number + 1:
            timeline = before.segment.timeline
            found.append(Gap(Segment(timeline, before.segment.number + 1),
                             Segment(timeline, after.segment.number - 1), before.at))
    return found


def reach(base: Base, archived: list[Archived], floor: float | None = None,
          last: LastTransaction | None = None) -> Reach | None:
    """What a clone of `base` can replay to; None while nothing was archived after it (or,
    for a base older than `floor`, when the segment before its start is not held).

    A replay stops at the first transaction after its target; one that runs out of WAL
    first fails ("recovery ended before configured recovery target was reached"). So
    where the run holds the archive's `last` transaction, it reaches no further than
    that: a segment is archived some time after its last commit. One on another
    timeline says nothing of this run."""
    index = next((i for i, a in enumerate(archived) if _after(a, base.created)), None)
    if index is None:
        return None
    if floor is not None and base.created < floor and not (
            index > 0 and archived[index - 1].segment.number + 1 == archived[index].segment.number):
        return None
    end = index
    while (end + 1 < len(archived)
           and archived[end + 1].segment.number == archived[end].segment.number + 1):
        end += 1
    since = base.created + CREATION_RESOLUTION
    until = archived[end].at
    if last is not None and last.segment.timeline == archived[end].segment.timeline \
            and last.segment.number <= archived[end].segment.number:
        until = min(until, last.at)
    if until < since:
        return None
    return Reach(base, archived[index].segment, archived[end].segment, since, until)


def window(bases: list[Base], archived: list[Archived], floor: float | None = None,
           last: LastTransaction | None = None) -> list[Interval]:
    """Every moment some snapshot and the archive reach, as disjoint intervals, oldest
    first: one interval while the archive is unbroken, more around a gap."""
    spans = sorted((r.since, r.until) for b in bases
                   if (r := reach(b, archived, floor, last)))
    merged: list[Interval] = []
    for since, until in spans:
        if merged and since <= merged[-1].until:
            if until > merged[-1].until:
                merged[-1] = Interval(merged[-1].since, until)
        else:
            merged.append(Interval(since, until))
    return merged


class Refusal(ValueError):
    """Why no snapshot and archive reach a moment: a sentence for the person asking."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Choice:
    reach: Reach
    moment: float | None  # the time asked (None for an LSN target)


def for_time(moment: float, now: float, bases: list[Base], archived: list[Archived],
             floor: float | None = None, last: LastTransaction | None = None) -> Choice:
    """The newest snapshot taken before `moment` whose run of archived WAL reaches it."""
    if moment > now:
        raise Refusal(f"{_at(moment)} is in the future (now is {_at(now)})", "future")
    for base in sorted(bases, key=lambda b: b.created, reverse=True):
        if base.created + CREATION_RESOLUTION > moment:
            continue
        found = reach(base, archived, floor, last)
        if found and found.holds(moment):
            return Choice(found, moment)
    raise Refusal(_outside(f"{_at(moment)}", moment, bases, archived, floor, last),
                  "outside_window")


def for_lsn(position: int, bases: list[Base], archived: list[Archived], *,
            segment_size: int = DEFAULT_SEGMENT_SIZE, floor: float | None = None) -> Choice:
    """The newest snapshot whose WAL position is known and not after `position`, whose
    run of archived WAL holds the segment `position` is in (`floor` as `reach` takes it,
    on a replication target)."""
    if not archived:
        raise Refusal("nothing is archived yet", "outside_window")
    timeline = archived[-1].segment.timeline
    wanted = segment_of(position, timeline, segment_size)
    last = archived[-1].segment
    if wanted > last:
        raise Refusal(f"that LSN is beyond the end of the archive (its last segment is "
                      f"{last.name(segment_size)})", "beyond_end")
    known = [b for b in bases if b.lsn is not None and b.lsn <= position]
    for base in sorted(known, key=lambda b: b.lsn or 0, reverse=True):
        found = reach(base, archived, floor)
        if found and found.start <= wanted <= found.end:
            return Choice(found, None)
    missing = [g for g in gaps(archived) if g.first <= wanted]
    if missing:
        raise Refusal(f"the archive misses {missing[-1].names(segment_size)}: that LSN is past "
                      "the gap and no snapshot with a known WAL position follows it", "gap")
    raise Refusal("no snapshot with a known WAL position (taken by PoZoL while the cluster "
                  "archived) is older than that LSN and reaches it", "outside_window")


def _outside(what: str, moment: float, bases: list[Base], archived: list[Archived],
             floor: float | None = None, last: LastTransaction | None = None) -> str:
    spans = window(bases, archived, floor, last)
    if not spans:
        return (f"{what} cannot be reached: no snapshot has archived WAL after it yet "
                "(take a snapshot, and wait for the archiver)")
    shown = describe(spans)
    for gap in gaps(archived):
        later = [s for s in spans if s.since > gap.after]
        if gap.after < moment and (not later or moment < later[0].since):
            return (f"{what} is past a gap in the archive (missing {gap.names()} after "
                    f"{_at(gap.after)}); the recoverable window is {shown}")
    return f"{what} is outside the recoverable window: {shown}"


def describe(spans: list[Interval]) -> str:
    if not spans:
        return "empty"
    return ", ".join(f"any moment from {_at(s.since)} to {_at(s.until)}" for s in spans)


def _at(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def removable(bases: list[Base], archived: list[Archived]) -> list[Archived]:
    """The segments no kept snapshot needs: those before the start of the oldest one.

    Without a snapshot, or before anything was archived after the oldest, nothing is
    removed: what the archive holds then anchors on no base, but it is not ours to
    judge that no snapshot will be restored (an operator may be restoring one)."""
    if not bases or not archived:
        return []
    oldest = min(bases, key=lambda b: b.created)
    first = next((a for a in archived if _after(a, oldest.created)), None)
    if first is None:
        return []
    return [a for a in archived if a.segment.number < first.segment.number]
