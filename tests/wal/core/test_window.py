import pytest

from apps.wal.core.segments import Segment
from apps.wal.core.window import (
    Archived,
    Base,
    LastTransaction,
    Refusal,
    for_lsn,
    for_time,
    gaps,
    reach,
    removable,
    window,
)

T = 1_800_000_000.0  # an epoch second


def archive(*numbers, start=T, every=60.0):
    """Segments archived one a minute from `start`, in the order given."""
    return [Archived(Segment(1, n), start + i * every) for i, n in enumerate(numbers)]


def test_a_snapshot_reaches_to_the_last_segment_of_its_unbroken_run():
    segments = archive(1, 2, 3, 4)  # archived at T, T+60, T+120, T+180
    base = Base("s1", T + 30)
    found = reach(base, segments)
    assert found.start == Segment(1, 2)  # the first archived after the snapshot
    assert found.end == Segment(1, 4)
    assert (found.since, found.until) == (T + 31, T + 180)


def test_a_snapshot_reaches_no_further_than_the_last_transaction_archived():
    """A replay to a moment after the archive's last commit runs out of WAL before its
    target, and PostgreSQL fails it: the window ends at that commit, not at the time
    its segment was archived."""
    segments = archive(1, 2, 3, 4)
    last = LastTransaction(Segment(1, 4), T + 170.5)
    assert reach(Base("s1", T + 30), segments, last=last).until == T + 170.5
    # Segments after the last transaction's hold none: their archive times reach nothing.
    assert reach(Base("s1", T + 30), segments, last=LastTransaction(Segment(1, 2), T + 55)
                 ).until == T + 55
    # A snapshot after the last transaction reaches nothing yet.
    assert reach(Base("s2", T + 100), segments, last=LastTransaction(Segment(1, 2), T + 55)
                 ) is None
    with pytest.raises(Refusal, match="outside the recoverable window"):
        for_time(T + 175, T + 1000, [Base("s1", T + 30)], segments, last=last)
    assert for_time(T + 170, T + 1000, [Base("s1", T + 30)], segments, last=last)


def test_a_last_transaction_on_another_timeline_caps_nothing():
    segments = archive(1, 2, 3, 4)
    other = LastTransaction(Segment(2, 3), T + 100)
    assert reach(Base("s1", T + 30), segments, last=other).until == T + 180


def test_a_last_transaction_past_a_gap_leaves_the_run_before_it_alone():
    segments = archive(1, 2, 4, 5)
    last = LastTransaction(Segment(1, 5), T + 170)
    spans = window([Base("old", T - 10), Base("new", T + 100)], segments, last=last)
    assert [(s.since, s.until) for s in spans] == [(T - 9, T + 60), (T + 101, T + 170)]


def test_nothing_archived_after_a_snapshot_reaches_nothing():
    assert reach(Base("s", T + 500), archive(1, 2)) is None


def test_a_gap_ends_the_run_and_splits_the_window():
    segments = archive(1, 2, 4, 5)  # 3 is missing; 4 archived at T+120
    assert [(g.first, g.last) for g in gaps(segments)] == [(Segment(1, 3), Segment(1, 3))]
    before, after = Base("old", T - 10), Base("new", T + 100)
    assert reach(before, segments).until == T + 60
    spans = window([before, after], segments)
    assert [(s.since, s.until) for s in spans] == [(T - 9, T + 60), (T + 101, T + 180)]


def test_a_moment_is_served_by_the_newest_snapshot_before_it():
    segments = archive(1, 2, 3, 4, 5)
    bases = [Base("a", T - 100), Base("b", T + 70), Base("c", T + 200)]
    chosen = for_time(T + 150, T + 1000, bases, segments)
    assert chosen.reach.base.label == "b"
    # Within the snapshot's second: an older snapshot serves it.
    assert for_time(T + 70.5, T + 1000, bases, segments).reach.base.label == "a"


def test_moments_outside_the_window_are_refused_with_the_window():
    segments = archive(1, 2, 4, 5)
    bases = [Base("a", T - 100)]
    with pytest.raises(Refusal, match="future") as future:
        for_time(T + 2000, T + 1000, bases, segments)
    assert future.value.code == "future"
    with pytest.raises(Refusal, match="any moment from .* to ") as before:
        for_time(T - 500, T + 1000, bases, segments)
    assert before.value.code == "outside_window"
    with pytest.raises(Refusal, match="past a gap in the archive .*000000010000000000000003"):
        for_time(T + 150, T + 1000, bases, segments)


def test_an_lsn_needs_a_snapshot_marked_before_it():
    segments = archive(1, 2, 3, 4)
    size = 16 * 2**20
    marked = Base("m", T + 30, lsn=2 * size + 100)
    assert for_lsn(3 * size + 5, [marked], segments).reach.base.label == "m"
    with pytest.raises(Refusal, match="no snapshot with a known WAL position"):
        for_lsn(2 * size + 50, [marked], segments)  # before the snapshot's own position
    with pytest.raises(Refusal, match="beyond the end") as beyond:
        for_lsn(9 * size, [marked], segments)
    assert beyond.value.code == "beyond_end"
    with pytest.raises(Refusal, match="no snapshot with a known WAL position"):
        for_lsn(3 * size, [Base("unmarked", T + 30)], segments)


def test_retention_keeps_what_the_oldest_snapshot_needs():
    segments = archive(1, 2, 3, 4, 5)
    bases = [Base("b", T + 150), Base("a", T + 61)]
    assert [a.segment.number for a in removable(bases, segments)] == [1, 2]
    assert removable([], segments) == []  # no snapshot anchors it: nothing judged
    assert removable([Base("late", T + 999)], segments) == []


def test_a_segment_archived_in_the_snapshots_second_is_kept():
    """zfs-fuse keeps whole-second mtimes: a segment archived at the snapshot's second
    may be the one being written when it was taken (a 10 s archive_timeout did it)."""
    segments = [Archived(Segment(1, 10), T - 5), Archived(Segment(1, 11), T),
                Archived(Segment(1, 12), T + 6)]
    base = Base("s", T)
    assert reach(base, segments).start == Segment(1, 11)
    assert [a.segment.number for a in removable([base], segments)] == [10]


def test_on_a_target_a_snapshot_older_than_the_floor_needs_the_segment_before_its_start():
    """A copy of the archive (a replication target): retention on the source removed the
    segments before its oldest snapshot's start, so an older snapshot received earlier
    may have lost the segment it starts from; it counts only when the one before is held."""
    segments = archive(5, 6, 7)  # 1-4 removed by the source's retention
    old, newer = Base("old", T - 600), Base("newer", T + 30)
    assert reach(old, segments) is not None  # without a floor it would claim 5 is its start
    assert reach(old, segments, floor=T + 30) is None
    assert reach(newer, segments, floor=T + 30).start == Segment(1, 6)  # 5 is before it
    assert [(s.since, s.until) for s in window([old, newer], segments, floor=T + 30)] == [
        (T + 31, T + 120)]
    # At or after the floor, a snapshot's first segment after it is its start as before.
    at_floor = Base("at", T - 30)
    assert reach(at_floor, segments, floor=T - 30).start == Segment(1, 5)
    with pytest.raises(Refusal, match="outside the recoverable window"):
        for_time(T - 300, T + 1000, [old, newer], segments, floor=T + 30)
    assert for_time(T + 90, T + 1000, [old, newer], segments, floor=T + 30).reach.base == newer


def test_on_a_target_an_lsn_is_not_served_by_a_snapshot_older_than_the_floor():
    """An LSN moment on a copy takes the floor as a time does: the old snapshot's
    start may be gone, so the LSN goes to the newer one or is refused."""
    size = 16 * 2**20
    segments = archive(5, 6, 7)
    old = Base("old", T - 600, lsn=1 * size)
    newer = Base("newer", T + 30, lsn=5 * size + 100)
    assert for_lsn(5 * size + 50, [old], segments).reach.base == old  # no floor: claimed
    with pytest.raises(Refusal, match="no snapshot with a known WAL position"):
        for_lsn(5 * size + 50, [old, newer], segments, floor=T + 30)
    assert for_lsn(6 * size + 5, [old, newer], segments,
                   floor=T + 30).reach.base == newer
