"""The archive's snapshot a replication link carries, and what it holds."""

from __future__ import annotations

import pytest

from apps.remote.commands import InvalidValue
from apps.wal.core import commands
from apps.wal.core.segments import Segment


def test_carry_snapshots_between_two_listings_and_quotes_the_names():
    text = commands.carry("tank/pozol_wal/pg:data", "pozol-carry-l-20261128T120000").text
    before, after = text.index("== before"), text.index("== after")
    assert before < text.index("zfs snapshot tank/pozol_wal/pg:data@pozol-carry-l-") < after
    assert "|| zfs snapshot" not in text  # a snapshot already there fails: not its listing
    with pytest.raises(InvalidValue):
        commands.carry("tank/x; rm -rf /", "a")
    with pytest.raises(InvalidValue):
        commands.carry("tank/x", "$(reboot)")


def test_what_the_snapshot_holds_is_what_both_listings_show():
    out = ("== before\n000000010000000000000003 100.5\n000000010000000000000004 101\n"
           "000000010000000000000005.tmp 101\n"
           "== after\n000000010000000000000004 101\n000000010000000000000005 102\n"
           "00000002.history 103\n")
    timeline, held = commands.parse_carried(out)
    # 3 was removed meanwhile, 5 archived meanwhile: neither is claimed.
    assert timeline == 1 and [(a.segment, a.at) for a in held] == [(Segment(1, 4), 101.0)]
    assert commands.parse_carried("== before\n== after\n") == (None, [])


def test_the_newest_timeline_is_the_one_kept():
    out = ("== before\n000000010000000000000004 1\n000000020000000000000005 2\n"
           "== after\n000000010000000000000004 1\n000000020000000000000005 2\n")
    timeline, held = commands.parse_carried(out)
    assert timeline == 2 and [a.segment for a in held] == [Segment(2, 5)]
