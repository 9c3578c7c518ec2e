"""The archive's snapshot a replication link carries, and what it holds."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from apps.remote.cluster import ClusterTarget
from apps.remote.commands import InvalidValue
from apps.wal.core import commands
from apps.wal.core.segments import Segment

FIXTURES = Path(__file__).parent / "fixtures"
TARGET = ClusterTarget("postgres", "/usr/lib/postgresql/15/bin", "/var/run/postgresql", 5432)


def captured(name: str) -> str:
    """Output of the status and carry scripts on a zfs-fuse test host (PostgreSQL 15),
    archiving, after three segment switches and a rolled-back insert."""
    return (FIXTURES / name).read_text()


def test_carry_snapshots_between_two_listings_and_quotes_the_names():
    text = commands.carry(TARGET, "tank/pozol_wal/pg:data", "pozol-carry-l-20261128T120000").text
    before, after = text.index("== before"), text.index("== after")
    assert text.index("== last transaction") < before
    assert before < text.index("zfs snapshot tank/pozol_wal/pg:data@pozol-carry-l-") < after
    assert "|| zfs snapshot" not in text  # a snapshot already there fails: not its listing
    with pytest.raises(InvalidValue):
        commands.carry(TARGET, "tank/x; rm -rf /", "a")
    with pytest.raises(InvalidValue):
        commands.carry(TARGET, "tank/x", "$(reboot)")


def test_what_the_snapshot_holds_is_what_both_listings_show():
    out = ("== before\n000000010000000000000003 100.5\n000000010000000000000004 101\n"
           "000000010000000000000005.tmp 101\n"
           "== after\n000000010000000000000004 101\n000000010000000000000005 102\n"
           "00000002.history 103\n")
    carried = commands.parse_carried(out)
    # 3 was removed meanwhile, 5 archived meanwhile: neither is claimed.
    assert carried.timeline == 1
    assert [(a.segment, a.at) for a in carried.segments] == [(Segment(1, 4), 101.0)]
    assert commands.parse_carried("== before\n== after\n") == commands.Carried(None, [], None)


def test_the_newest_timeline_is_the_one_kept():
    out = ("== before\n000000010000000000000004 1\n000000020000000000000005 2\n"
           "== after\n000000010000000000000004 1\n000000020000000000000005 2\n")
    carried = commands.parse_carried(out)
    assert carried.timeline == 2 and [a.segment for a in carried.segments] == [Segment(2, 5)]


ABORTED_AT = datetime(2026, 11, 29, 1, 13, 3, 876409, tzinfo=UTC).timestamp()


def test_the_status_names_the_newest_transaction_pg_waldump_found():
    status = commands.parse_status(captured("status-zfs-fuse-pg15.txt"))
    assert len(status.archived) == 5
    assert status.last_transaction == commands.LastTransaction(Segment(1, 7), ABORTED_AT)
    # Archived a moment after it: the window must end at the transaction, not the file.
    newest = max(status.archived, key=lambda a: a.segment.number)
    assert newest.segment == Segment(1, 7) and newest.at > ABORTED_AT


def test_a_carried_snapshot_names_the_newest_transaction_it_holds():
    carried = commands.parse_carried(captured("carry-zfs-fuse-pg15.txt"))
    assert [a.segment.number for a in carried.segments] == [3, 4, 5, 6, 7]
    assert carried.last_transaction == commands.LastTransaction(Segment(1, 7), ABORTED_AT)


def test_without_pg_waldump_or_a_transaction_no_last_one_is_claimed():
    out = captured("status-zfs-fuse-pg15.txt").split("== last transaction")[0]
    assert commands.parse_status(out + "== last transaction\n").last_transaction is None
    assert commands.parse_last_transaction(["000000010000000000000007 rmgr: Transaction "
                                            "desc: COMMIT 2026-11-29 01:13:03 CET"]) is None
