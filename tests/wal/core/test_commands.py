"""The archive's snapshot a replication link carries, and what it holds."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from apps.remote.cluster import ClusterTarget
from apps.remote.commands import InvalidValue
from apps.wal.core import commands
from apps.wal.core import plan as archive_plan
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


# The archive dataset made read-only (`zfs set readonly=on`) while the cluster archived:
# captured by tests/integration/test_wal_faults.py's read-only test (POZOL_WAL_CAPTURE).
READ_ONLY = "status-read-only-zfs-fuse-pg15.txt"
NOTED_AT = 1795939476.0
STUCK = "000000010000000000000004"


def test_the_status_reads_the_reason_the_archive_command_noted():
    status = commands.parse_status(captured(READ_ONLY))
    assert status.failing and status.archiver.last_failed_wal == STUCK
    assert status.failure == status.failure_reason() == commands.Failure(
        NOTED_AT, STUCK, "cp: cannot create regular file '/tmp/pozol-test-fleet-x3_fix32/host1/"
                         "mnt/pozol_wal/pg:data/000000010000000000000004.tmp': Read-only file "
                         "system")
    # Plenty of room: the note, not the space, is what says why.
    assert status.available > status.archiver.segment_size


def _archived_at(out: str, at: float) -> str:
    """`out` with pg_stat_archiver's last success at `at` (epoch seconds)."""
    head, row, rest = out.split("\n", 2)
    fields = row.split("\t")
    fields[1] = str(at)
    return "\n".join([head, "\t".join(fields), rest])


def test_a_note_from_before_the_last_success_is_no_reason():
    out = captured(READ_ONLY)
    # Archiving succeeded after the failure: not failing, whatever the note says.
    assert commands.parse_status(_archived_at(out, NOTED_AT + 5)).failure_reason() is None
    # Failing again, but the note is older than the last success (a data directory
    # rolled back to a snapshot taken while archiving failed): not this failure's reason.
    row = out.split("\n")[1].split("\t")
    assert float(row[4]) > NOTED_AT + 0.5
    stale = _archived_at(out, NOTED_AT + 0.5).replace(f"{NOTED_AT:.0f} ", f"{NOTED_AT - 60:.0f} ")
    assert commands.parse_status(stale).failure is not None
    assert commands.parse_status(stale).failure_reason() is None
    # A read without a note (a success since, or a command from before the note).
    assert commands.parse_status(captured("status-quota-full-zfs-fuse-pg15.txt")).failure is None


def test_the_noted_reason_is_one_line_of_printable_text_and_bounded():
    hostile = "\x1b[31mred\x1b[0m\x00 \x07bell\x9b " + "x" * 2000
    failure = commands.parse_failure([f"1795939476 {STUCK} {hostile}"])
    assert failure.reason.startswith("[31mred [0m bell xx")
    assert len(failure.reason) == 500
    assert all(ch.isprintable() for ch in failure.reason)
    assert commands.parse_failure([f"1795939476 {STUCK}"]).reason == (
        "the archive command printed no reason")
    assert commands.parse_failure(["1795939476 00000002.history cp: x"]).wal == "00000002.history"
    for bad in ("soon 000000010000000000000004 cp: x", "1795939476 $(reboot) cp: x"):
        assert commands.parse_failure([bad]) is None
    assert commands.parse_failure([]) is None


def test_the_note_is_read_from_the_data_directory_quoted():
    target = ClusterTarget("postgres", "/usr/lib/postgresql/15/bin", "/var/run/postgresql",
                           5432, data_dir="/var/lib/postgresql/15/main")
    text = commands.status(target, "tank/pozol_wal/pg:data").text
    assert "[ ! -f /var/lib/postgresql/15/main/pozol_archive_failure ] ||" in text
    assert text.index("== archive failure") < text.index("== dataset")
    assert "pozol_archive_failure" not in commands.status(TARGET, "tank/x").text


# Captured by tests/integration/test_wal_command.py (POZOL_WAL_CAPTURE): a cluster whose
# archive_command an older PoZoL wrote.
OLDER_COMMAND = "status-older-command-zfs-fuse-pg15.txt"


def test_the_status_reads_the_archive_command_the_cluster_runs():
    status = commands.parse_status(captured(OLDER_COMMAND))
    directory = status.mountpoint
    assert status.archive_command == (
        f"if [ -f {directory}/%f ]; then cmp -s %p {directory}/%f; else cp %p "
        f"{directory}/%f.tmp && sync {directory}/%f.tmp && mv {directory}/%f.tmp "
        f"{directory}/%f && sync {directory}; fi")
    assert status.archive_command != archive_plan.archive_command(directory)


def test_a_read_without_the_command_leaves_it_unknown():
    # A read from before the command was asked, a psql that printed nothing, not hex.
    assert commands.parse_status(captured("status-zfs-fuse-pg15.txt")).archive_command is None
    out = captured(OLDER_COMMAND)
    blank = out.replace(out.split("== archive command\n")[1].split("\n")[0], "")
    assert commands.parse_status(blank).archive_command is None
    assert commands.parse_command(["not hex"]) is None
