"""The drill's pure parts: the check query's shape, its script, the answers and log
tail read back, the newest snapshot common to data and WAL, and the drill's port."""

from datetime import UTC, datetime

import pytest

from apps.clones.core.layout import CloneError, Layout, Origin
from apps.drills.core import check

ORIGIN = Origin(data_dataset="tank/pg/data", data_mountpoint="/mnt/pg/data",
                data_dir="/mnt/pg/data/pgdata", wal_dataset="tank/pg/wal",
                wal_mountpoint="/mnt/pg/wal", wal_dir="/mnt/pg/wal/pg_wal",
                server_version_num=150004)
LAYOUT = Layout(origin=ORIGIN, name="pozol-drill-7", snapshot="s1", port=6599,
                listen="127.0.0.1", allowed=(), role="pozol_drill",
                socket_dir="/var/lib/pozol/clones/pozol-drill-7")


@pytest.mark.parametrize("value", ["", "   ", None, 5, "\\! rm -rf /", "x" * 4001, "a\x00b"])
def test_bad_check_queries_are_refused(value):
    with pytest.raises(CloneError):
        check.check_query(value)


def test_the_query_goes_on_stdin_never_on_the_command_line():
    hostile = "SELECT '$(reboot)'; SELECT 1"
    command = check.check(LAYOUT, hostile, "pozol_check_1a")
    assert hostile not in command.text and "reboot" not in command.text
    assert command.stdin == hostile.encode()
    assert "default_transaction_read_only=on" in command.text
    assert "-p 6599" in command.text


def test_the_query_runs_as_the_drills_role_under_a_wall_clock_limit():
    command = check.check(LAYOUT, "SELECT 1", "pozol_check_1a", seconds=7)
    assert "-U pozol_check_1a" in command.text
    assert f"timeout -k 5 {7 + check.GRACE_SECONDS} " in command.text
    assert "statement_timeout=7000" in command.text
    assert "NOSUPERUSER" in command.text and "pg_read_all_data" in command.text
    assert "pg_write_all_data" not in command.text
    with pytest.raises(ValueError):
        check.check(LAYOUT, "SELECT 1", "Robert'); DROP")


def test_answers_and_the_log_tail_are_read_back():
    out = "pozol-check\tpostgres\t1234\nnoise\npozol-check\tapp db\t7\n"
    assert check.answers(out) == {"postgres": "1234", "app db": "7"}
    error, tail = check.split_log("pg_ctl: could not start server\nthe clone's server log "
                                  "ends:\nPANIC:  could not locate a valid checkpoint record")
    assert error == "pg_ctl: could not start server"
    assert tail == "PANIC:  could not locate a valid checkpoint record"
    assert check.split_log("plain error") == ("plain error", "")


def at(hour: int) -> datetime:
    return datetime(2026, 11, 24, hour, tzinfo=UTC)


def test_the_newest_snapshot_on_both_datasets_is_chosen():
    rows = [check.SnapshotSeen("tank/pg/data", "a", at(1)),
            check.SnapshotSeen("tank/pg/wal", "a", at(1)),
            check.SnapshotSeen("tank/pg/data", "b", at(3)),  # no WAL of that moment
            check.SnapshotSeen("tank/pg/data", "c", at(2)),
            check.SnapshotSeen("tank/pg/wal", "c", at(2)),
            check.SnapshotSeen("tank/other", "d", at(4))]
    assert check.newest_common(rows, ["tank/pg/data", "tank/pg/wal"]) == "c"
    assert check.newest_common(rows, ["tank/pg/data"]) == "b"
    assert check.newest_common(rows[:1], ["tank/pg/data", "tank/pg/wal"]) is None


def test_the_drill_port_comes_from_the_top_of_the_range():
    assert check.pick_port(6500, 6599, set()) == 6599
    assert check.pick_port(6500, 6599, {6599, 6598}) == 6597
    assert check.pick_port(6500, 6501, {6500, 6501}) is None


def test_a_clone_of_postgresql_14_or_later_syncs_with_syncfs():
    assert LAYOUT.settings()["recovery_init_sync_method"] == "syncfs"
    old = Layout(**{**LAYOUT.__dict__, "origin": Origin(**{**ORIGIN.__dict__,
                                                           "server_version_num": 130010})})
    assert "recovery_init_sync_method" not in old.settings()
