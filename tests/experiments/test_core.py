"""The arithmetic of experiments, pure: order, WAL per transaction, spread, verdict."""

import pytest

from apps.experiments.core import commands, knobs, report, runs, scripts, stats
from apps.experiments.core.templates import SCRIPTS, TEMPLATES
from apps.remote.commands import InvalidValue


def test_rounds_alternate_so_no_value_always_runs_last():
    assert runs.alternating(["on", "off"], 4) == [
        ("on", 0), ("off", 0), ("off", 1), ("on", 1), ("on", 2), ("off", 2), ("off", 3),
        ("on", 3)]
    order = [v for v, _ in runs.alternating(["8K", "16K", "32K"], 2)]
    assert order == ["8K", "16K", "32K", "32K", "16K", "8K"]


def test_wal_per_transaction_is_the_lsn_difference_over_transactions():
    assert runs.wal_per_transaction(1_000, 201_000, 100) == 2_000
    assert runs.wal_per_transaction(5, 3, 100) is None  # went backwards: not a measurement
    assert runs.wal_per_transaction(1, 2, 0) is None
    assert runs.wal_per_transaction(None, 2, 5) is None


def test_stat_gives_mean_and_sample_spread():
    s = stats.stat([10.0, 12.0, None])
    assert (s.mean, s.n) == (11.0, 2) and s.spread == pytest.approx(1.41421, rel=1e-4)
    assert stats.stat([5.0]).spread is None and stats.stat([]).mean is None


def tps_runs(values: dict) -> list[dict]:
    return [{"value": v, "tps": t} for v, ts in values.items() for t in ts]


def test_the_verdict_names_a_winner_only_beyond_the_spread():
    clear = stats.summarise(["8K", "16K"], tps_runs({"8K": [100, 102], "16K": [120, 121]}))
    v = stats.verdict(clear, "tps")
    assert v.winner == "16K" and "16K wins, 1.19x against 8K" in v.text

    close = stats.summarise(["8K", "16K"], tps_runs({"8K": [100, 110], "16K": [104, 112]}))
    v = stats.verdict(close, "tps")
    assert v.winner is None and "within the spread" in v.text

    single = stats.summarise(["a", "b"], tps_runs({"a": [1], "b": [50]}))
    assert stats.verdict(single, "tps").winner is None  # no spread: no winner


def test_lower_is_better_for_wal_per_transaction():
    rows = [{"value": "on", "wal_per_tx": w} for w in (2000, 2100)] + \
           [{"value": "off", "wal_per_tx": w} for w in (430, 440)]
    v = stats.verdict(stats.summarise(["on", "off"], rows), "wal_per_tx")
    assert v.winner == "off" and "4.71x lower" in v.text


def test_room_counts_data_twice_when_reinitialised_and_the_wal():
    assert runs.room_needed(10, 120, 4, True) == int(
        (2 * 10 * 16 * 2**20 + 120 * 10**7) * 1.25)
    assert runs.room_needed(1, 5, 2, False) < runs.room_needed(1, 5, 2, True)


def test_chart_follows_the_convention_with_gaps_for_the_other_values():
    rows = [{"value": "on", "tps": 10.0, "ended": 100.0},
            {"value": "off", "tps": 12.0, "ended": 200.0},
            {"value": "off", "tps": None, "ended": None}]
    chart = report.chart("TPS per run", ["on", "off"], rows, "tps")
    assert chart["x"] == [100.0, 200.0] and chart["kind"] == "bars"
    assert chart["series"] == [{"label": "on", "unit": "tps", "values": [10.0, None]},
                               {"label": "off", "unit": "tps", "values": [None, 12.0]}]


def test_snapshot_and_drain_parsers():
    assert commands.parse_snapshot("123456\t7\n") == (123456, 7)
    with pytest.raises(ValueError):
        commands.parse_snapshot("ERROR: x")
    assert commands.parse_drain("10\n100.5 101.75\n") == (10240, 1.25)
    assert commands.parse_ratio("1.71x") == 1.71 and commands.parse_ratio("7.59") == 7.59
    assert "pg_stat_checkpointer" in commands.snapshot_query(170000)
    assert "pg_stat_bgwriter" in commands.snapshot_query(150006)


def test_scripts_refuse_any_door_to_a_shell():
    assert scripts.problems(SCRIPTS["copy-into-new-table"].text) == []
    assert scripts.problems(SCRIPTS["copy-into-new-table"].setup, setup=True) == []
    assert scripts.problems("\\shell rm -rf /\nSELECT 1;")
    assert scripts.problems("  \\setshell x echo 1")
    assert scripts.problems("COPY t FROM PROGRAM 'id'")
    assert scripts.problems("\\! id", setup=True)
    assert scripts.problems("")
    assert scripts.problems("select 1;\x00")


def test_values_are_checked_as_their_writer_quotes_them():
    assert knobs.validate("zfs", "recordsize", "16K") == "16K"
    assert knobs.validate("sysctl", "vm.dirty_bytes", "vm.dirty_ratio=20") == \
        "vm.dirty_ratio=20"
    assert knobs.sysctl_assignment("vm.dirty_bytes", "vm.dirty_ratio=20") == \
        ("vm.dirty_ratio", "20")
    for layer, key, value in [("sysctl", "vm.dirty_bytes", "1;reboot"),
                              ("sysctl", "vm.dirty_bytes", "kernel.x=1"),
                              ("postgres", "full_page_writes", "on\noff"),
                              ("zfs", "recordsize; rm", "8K"), ("module", "x/../y", "1")]:
        with pytest.raises(InvalidValue):
            knobs.validate(layer, key, value)


def test_every_template_cites_a_published_figure_and_valid_values():
    for template in TEMPLATES.values():
        assert template.citation and template.published
        for value in template.values:
            knobs.validate(template.layer, template.key, value)
        assert template.script in ("", *SCRIPTS)


def test_setup_goes_to_the_server_as_one_string_psql_never_reads():
    import shlex

    from apps.remote.cluster import ClusterTarget

    target = ClusterTarget.of(owner="postgres", bin_dir="/usr/lib/postgresql/15/bin",
                              socket_dir="/run/pg", port=5432, database="pgbench")
    text = "\\! id\nSELECT 1; \\o |id\n" + SCRIPTS["copy-into-new-table"].setup
    command = commands.setup(target, text, "/pg/data/pozol-copy-source.csv")
    argv = shlex.split(command.text)
    sql = argv[-1]  # psql -c SQL, last
    # Nothing on stdin, where psql would read meta-commands.
    assert argv[-2] == "-c" and command.stdin is None
    assert not sql.startswith("\\")  # a -c string starting so would be one meta-command
    assert sql.startswith(commands.SETUP_LEAD) and "\\! id" in sql
    assert "TO '/pg/data/pozol-copy-source.csv' WITH" in sql and ":'copy_file'" not in sql
    with pytest.raises(InvalidValue):
        commands.setup(target, "SELECT 1", "/pg/it's")


def test_a_custom_scripts_role_gets_its_password_on_stdin_only():
    from apps.remote.cluster import ClusterTarget

    target = ClusterTarget(owner="postgres", bin_dir="/usr/lib/postgresql/15/bin",
                           socket_dir="/run/pg", port=5432)
    confined = commands.Confined.of(12, "/tmp/pozol-exp.abc123")
    password = "ab" * 16
    command = commands.confine(target, confined, password)
    assert password not in command.text and password not in command.shown
    assert command.stdin.decode().startswith(password + "\n")
    assert "local pozol_exp_12 pozol_exp_12 scram-sha-256 #pozol-experiment:pozol_exp_12:" in (
        command.text)
    assert "-U pozol_exp_12" in commands.pgbench(
        target, {"clients": 1, "threads": 1, "duration": 2}, "/tmp/pozol-exp.abc123/s.sql",
        confined).text
    with pytest.raises(ValueError):
        commands.confine(target, confined, "x'; DROP ROLE postgres; --" * 2)
    with pytest.raises(ValueError):
        commands.Confined(role="postgres", passfile="/tmp/x")
