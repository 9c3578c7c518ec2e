import re
import shutil
import subprocess
from pathlib import Path

import pytest

from apps.remote.commands import InvalidValue
from apps.wal.core import commands
from apps.wal.core.plan import (
    EXPANDED_LIMIT,
    FAILURE_BYTES,
    FAILURE_NOTE,
    archive_command,
    archive_dataset,
    check_timeout,
    disable_plan,
    enable_plan,
    expanded,
    restore_command,
)
from apps.wal.core.segments import Segment
from tests.remote.test_commands import HOSTILE


def test_the_archive_is_outside_the_clusters_parent():
    assert archive_dataset("tank/pg/data") == "tank/pozol_wal/pg:data"
    assert archive_dataset("tank") == "tank/pozol_wal/tank"


def test_the_archive_command_never_overwrites_and_renames_atomically():
    text = archive_command("/tank/pozol_wal/pg:data")
    assert text.startswith("d=/tank/pozol_wal/pg:data; f=%f; p=%p; r=$(exec 2>&1; ")
    assert "if [ -f $d/$f ]; then cmp -s $p $d/$f ||" in text
    assert "cp $p $d/$f.tmp && sync $d/$f.tmp && mv $d/$f.tmp $d/$f && sync $d; fi" in text
    # A failure is noted in the data directory (the working directory), whole or not at
    # all, and still fails; a success removes the note.
    assert text.endswith("> pozol_archive_failure.tmp 2> /dev/null "
                         "&& mv -f pozol_archive_failure.tmp pozol_archive_failure; exit 1")
    assert "&& { [ ! -e pozol_archive_failure ] || rm -f pozol_archive_failure; exit 0; }" in text
    # PostgreSQL reads % itself: only %p, %f and %% (a literal %) are in the command.
    assert set(re.findall(r"%.", text.replace("%%", ""))) == {"%p", "%f"}
    assert restore_command("/a/b") == "cp /a/b/%f %p"
    for bad in ("relative", "/a b", "/a;rm", "/a'b", "/a/../b", "/a$HOME", *HOSTILE):
        with pytest.raises(InvalidValue):
            archive_command(bad)


def run_archive_command(directory: Path, data: Path, name: str) -> subprocess.CompletedProcess:
    """The command as PostgreSQL runs it: %-placeholders replaced, `sh -c` in the data
    directory. Without `mountpoint` in PATH (a temporary directory is not a mount)."""
    text = expanded(archive_command(str(directory)), name)
    tools = data / "bin"
    tools.mkdir(exist_ok=True)
    for tool in ("cp", "sync", "mv", "cmp", "tr", "tail", "rm"):
        if not (tools / tool).exists():
            (tools / tool).symlink_to(shutil.which(tool))
    return subprocess.run(["/bin/sh", "-c", text], cwd=data, capture_output=True, text=True,
                          env={"PATH": str(tools)}, timeout=30)


def test_the_archive_command_notes_why_it_failed_and_clears_the_note_on_success(tmp_path):
    """Run by /bin/sh here: the shell logic (what is noted, the exit status); the
    reasons a real archive gives are tests/integration/test_wal_faults.py's."""
    archive, data = tmp_path / "archive", tmp_path / "data"
    (data / "pg_wal").mkdir(parents=True)
    archive.mkdir()
    name = "000000010000000000000004"
    (data / "pg_wal" / name).write_bytes(b"segment")
    note = data / FAILURE_NOTE

    assert run_archive_command(archive, data, name).returncode == 0
    assert (archive / name).read_bytes() == b"segment" and not note.exists()
    # Archived already with the same content (PostgreSQL did not hear of the success).
    assert run_archive_command(archive, data, name).returncode == 0

    (archive / name).write_bytes(b"another")
    failed = run_archive_command(archive, data, name)
    assert failed.returncode == 1
    assert (archive / name).read_bytes() == b"another"  # never overwritten
    assert "with different content" in failed.stderr  # the server log still has it
    segment, reason = note.read_text().split("\n")
    assert segment == name and reason == (
        f"{archive}/{name} is archived already with different content: not overwritten")

    (archive / name).unlink()
    (data / "pg_wal" / name).unlink()  # cp: cannot stat: the message, the last 500 bytes
    failed = run_archive_command(archive, data, name)
    assert failed.returncode == 1 and "No such file or directory" in note.read_text()
    assert len(note.read_text().split("\n")[1].encode()) <= FAILURE_BYTES

    (data / "pg_wal" / name).write_bytes(b"segment")
    assert run_archive_command(archive, data, name).returncode == 0
    assert not note.exists() and (archive / name).read_bytes() == b"segment"


def test_a_read_never_sees_a_half_written_note(tmp_path):
    """The status read can come while the command writes the note (PostgreSQL retries a
    failing segment every second). A `tr` that copies the note aside as it starts shows
    what such a read would see between the segment's name and the reason."""
    archive, data = tmp_path / "archive", tmp_path / "data"
    (data / "pg_wal").mkdir(parents=True)
    archive.mkdir()
    name = "000000010000000000000004"
    (data / "pg_wal" / name).write_bytes(b"segment")
    (archive / name).write_bytes(b"another")
    assert run_archive_command(archive, data, name).returncode == 1
    first = (data / FAILURE_NOTE).read_text()

    tools = data / "bin"
    (tools / "tr").unlink()
    (tools / "tr").write_text(f"#!/bin/sh\n/bin/cat {FAILURE_NOTE} > seen 2> /dev/null\n"
                              f"exec {shutil.which('tr')} \"$@\"\n")
    (tools / "tr").chmod(0o755)
    (archive / name).unlink()
    (data / "pg_wal" / name).unlink()
    assert run_archive_command(archive, data, name).returncode == 1
    assert (data / "seen").read_text() == first  # the whole earlier note, not a torn one
    assert "No such file or directory" in (data / FAILURE_NOTE).read_text()
    assert not (data / f"{FAILURE_NOTE}.tmp").exists()


@pytest.mark.parametrize("value", [9, 3601, True, "60", 60.0, None])
def test_a_bad_timeout_is_refused(value):
    with pytest.raises(InvalidValue):
        check_timeout(value)


def test_enabling_plans_a_restart_only_when_archive_mode_changes():
    current = {"archive_mode": "off", "archive_command": "(disabled)", "archive_timeout": "0"}
    plan = enable_plan(current, "tank/pozol_wal/pg:data", "/tank/pozol_wal/pg:data", 60,
                       dataset_exists=False)
    assert plan.restart and plan.create_dataset
    assert [c.after for c in plan.changes][0::2] == ["on", "60"]
    plan = enable_plan({**current, "archive_mode": "on"}, "t/x", "/t/x", 60, dataset_exists=True)
    assert not plan.restart
    back = disable_plan({"archive_mode": "on"}, {"archive_mode": {"value": "off"}}, "t/x")
    assert back.restart and back.changes[0].after == "off"


def test_restoring_sets_what_came_from_auto_conf_and_resets_the_rest():
    before = commands.parse_settings(
        "archive_command\t(disabled)\t\tstring\tdefault\t\tf\n"
        "archive_mode\toff\t\tenum\tconfiguration file\t/etc/postgresql.conf\tf\n"
        "archive_timeout\t30\ts\tinteger\tconfiguration file\t/d/postgresql.auto.conf\tf\n")
    assert commands.restoring(before) == {"archive_command": None, "archive_mode": None,
                                          "archive_timeout": "30"}


def test_the_status_is_read_from_one_round_trip():
    out = ("== archiver\n000000010000000000000003\t1800000000.5\t2\t000000010000000000000002\t"
           "1799999999\t3\t000000010000000000000005\t0/5000060\t16777216\ton\n"
           "== dataset\nused\t123\navailable\t999\nmountpoint\t/tank/pozol_wal/pg:data\n"
           "== files\n000000010000000000000003 1800000000.5\n000000010000000000000002.tmp 1\n"
           "00000002.history 5\n000000010000000000000002 1799999990\n")
    status = commands.parse_status(out)
    assert status.archiver.failed_count == 2 and status.used == 123
    assert sorted(a.segment for a in status.archived) == [Segment(1, 2), Segment(1, 3)]
    assert status.lag_segments() == 1 and status.timeline == 1


def test_only_segment_files_are_ever_removed():
    (command,) = commands.remove("/tank/pozol_wal/pg:data", ["000000010000000000000003"])
    assert command.text == "cd /tank/pozol_wal/pg:data && rm -f -- 000000010000000000000003"
    with pytest.raises(InvalidValue):
        commands.remove("/x", ["../../etc/passwd"])


def test_a_directory_that_would_get_the_command_cut_by_postgresql_15_is_refused():
    """PostgreSQL 15 and older drop what passes 1023 bytes of the expanded command: the
    cut would take the closing `exit 1`, and a failed copy would read as archived."""
    assert len(expanded(archive_command("/tank/pozol_wal/pg:data"))) <= EXPANDED_LIMIT
    longest = "/" + "a" * (EXPANDED_LIMIT - len(expanded(archive_command("/"))))
    assert len(expanded(archive_command(longest))) == EXPANDED_LIMIT
    with pytest.raises(InvalidValue, match="too long"):
        archive_command(longest + "a")
