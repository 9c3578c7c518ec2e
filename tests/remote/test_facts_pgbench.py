"""pgbench facts from fixtures: real pgbench 15 output captured on a cluster, and
PG13/14/16/17 output written from the documented formats (see the fixtures' README)."""

from pathlib import Path

import pytest

from apps.remote.facts import pgbench

FIXTURES = Path(__file__).resolve().parents[1] / "benchmarks" / "fixtures" / "pgbench"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_captured_pg15_tpcb_summary():
    summary = pgbench.parse_summary(read("pg15-captured-tpcb.stdout"))
    assert summary.version == "15.20" and summary.server_version is None
    assert summary.tps == 2054.085107
    assert (summary.latency_avg_ms, summary.latency_stddev_ms) == (0.970, 0.295)
    assert (summary.failed, summary.transactions) == (0, 10269)
    assert (summary.clients, summary.threads, summary.duration_s, summary.scale) == (2, 1, 5, 1)
    assert summary.transaction_type == "<builtin: TPC-B (sort of)>"
    assert summary.query_mode == "simple" and summary.connection_time_ms == 3.909
    assert len(summary.per_statement) == 11
    assert summary.per_statement[4] == {"statement": "BEGIN;", "latency_ms": 0.058}
    assert summary.per_statement[-1] == {"statement": "END;", "latency_ms": 0.277}
    assert summary.per_statement[0]["statement"] == r"\set aid random(1, 100000 * :scale)"


def test_captured_pg15_select_only_prepared():
    summary = pgbench.parse_summary(read("pg15-captured-select-only.stdout"))
    assert summary.transaction_type == "<builtin: select only>"
    assert summary.query_mode == "prepared" and summary.tps == 45432.611142
    assert [s["latency_ms"] for s in summary.per_statement] == [0.0, 0.038]


def test_captured_pg15_progress():
    points = pgbench.parse_progress(read("pg15-captured-tpcb.stderr"))
    assert [p.t for p in points] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert points[0] == pgbench.ProgressPoint(1.0, 1951.9, 1.017, 0.241, 0)
    assert points[-1].tps == 2488.9


def test_captured_aborted_run():
    stderr = read("pg15-captured-aborted.stderr")
    assert pgbench.was_aborted(stderr)
    assert not pgbench.was_aborted(read("pg15-captured-tpcb.stderr"))
    assert [p.t for p in pgbench.parse_progress(stderr)] == [1.0, 2.0]
    # The summary of an aborted run is still printed, from the transactions done.
    assert pgbench.parse_summary(read("pg15-captured-aborted.stdout")).transactions == 4541


def test_pg13_has_no_version_failures_or_initial_connection_time():
    summary = pgbench.parse_summary(read("pg13-tpcb.stdout"))
    assert summary.version is None and summary.failed is None
    # "excluding connections establishing" is the figure comparable with PG14+.
    assert summary.tps == 896.967014
    assert (summary.clients, summary.threads, summary.duration_s, summary.scale) == (10, 2, 60, 10)
    assert summary.transactions == 53810 and summary.connection_time_ms is None
    assert len(summary.per_statement) == 11 and summary.per_statement[7]["latency_ms"] == 5.528


def test_pg13_and_pg14_progress_have_no_failed_column_and_nan_is_none():
    points = pgbench.parse_progress(read("pg13-tpcb.stderr"))
    assert [p.failed for p in points] == [None, None, None]
    assert points[2].stddev_ms is None and points[2].latency_ms == 11.121
    assert len(pgbench.parse_progress(read("pg14-tpcb.stderr"))) == 2


def test_pg14_summary():
    summary = pgbench.parse_summary(read("pg14-tpcb.stdout"))
    assert summary.version == "14.15" and summary.failed is None
    assert summary.tps == 896.967014 and summary.query_mode == "prepared"
    assert summary.per_statement[0]["latency_ms"] == 0.002


def test_pg16_t_mode_and_a_different_server_version():
    summary = pgbench.parse_summary(read("pg16-tpcb.stdout"))
    assert (summary.version, summary.server_version) == ("16.2", "15.6")
    assert summary.transactions == 10000 and summary.duration_s is None
    assert summary.failed == 0 and summary.query_mode == "extended"


def test_pg17_select_only_with_failures_and_optional_progress_fields():
    summary = pgbench.parse_summary(read("pg17-select-only.stdout"))
    assert summary.version == "17.2" and summary.failed == 3 and summary.scale == 100
    assert summary.per_statement[1]["latency_ms"] == 0.197
    points = pgbench.parse_progress(read("pg17-select-only.stderr"))
    # The fifth line is still being written: left for the next read.
    assert [p.failed for p in points] == [0, 1, 2, 0]
    assert points[3].stddev_ms is None


def test_a_run_that_processed_nothing_leaves_the_rest_none():
    summary = pgbench.parse_summary(
        "pgbench (15.4)\ntransaction type: <builtin: TPC-B (sort of)>\n"
        "number of transactions actually processed: 0\n")
    assert summary.transactions == 0 and summary.tps is None and summary.latency_avg_ms is None
    assert pgbench.parse_summary("") == pgbench.Summary(*[None] * 9)


def test_complete_part_keeps_whole_lines_only():
    assert pgbench.complete_part("a\nb\npart") == "a\nb\n"
    assert pgbench.complete_part("no newline yet") == ""


def test_meminfo_samples_in_bytes_complete_lines_only():
    samples = pgbench.parse_meminfo_samples(read("meminfo-samples.txt"))
    assert samples == [(1767225600.012345678, 228 * 1024, 0),
                       (1767225601.015, 1024 * 1024, 32872 * 1024),
                       (1767225602.018, 4096 * 1024, 0)]
    assert pgbench.parse_meminfo_samples("garbage\n1 2\n") == []


def test_start_marker():
    assert pgbench.parse_start_epoch("pozol-start 1767225600.5\nstarting vacuum") == 1767225600.5
    assert pgbench.parse_start_epoch("starting vacuum...end.\n") is None


@pytest.mark.parametrize(("version", "query"), [
    (130012, pgbench.WAL_LSN_QUERY), (140000, pgbench.WAL_BYTES_QUERY),
    (150004, pgbench.WAL_BYTES_QUERY), (None, pgbench.WAL_BYTES_QUERY)])
def test_wal_query_by_version(version, query):
    assert pgbench.wal_query(version) == query


def test_wal_bytes():
    assert pgbench.parse_wal_bytes("27194016\n") == 27194016
    assert pgbench.parse_wal_bytes("4060086368.0\n") == 4060086368
    for bad in ("", "-1", "abc", "1.5"):
        with pytest.raises(ValueError):
            pgbench.parse_wal_bytes(bad)


def test_wal_per_transaction():
    assert pgbench.wal_per_transaction(1000, 11000, 100) == 100.0
    assert pgbench.wal_per_transaction(11000, 1000, 100) is None  # stats were reset
    assert pgbench.wal_per_transaction(None, 1000, 100) is None
    assert pgbench.wal_per_transaction(1000, 2000, 0) is None
