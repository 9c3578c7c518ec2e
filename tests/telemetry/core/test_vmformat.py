"""The VictoriaMetrics store's pure halves (apps.telemetry.core.vmformat) on what the
real binary answered (tests/telemetry/victoriametrics/README.md) and on the zfs-fuse
test host's captured samples."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from apps.telemetry.core import metrics, series, vmformat
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.rates import rates
from tests.telemetry.core.helpers import fuse_spec
from tests.telemetry.fixtures import captured
from tests.telemetry.victoriametrics import HERE
from tests.telemetry.victoriametrics import captured as answer

STEP = timedelta(seconds=60)


def samples():
    (one, at_one), (two, at_two) = captured(1), captured(2)
    return parse_sample(one, fuse_spec(), at_one), parse_sample(two, fuse_spec(), at_two)


def parsed(text: str) -> dict[tuple[str, frozenset], tuple[float, float]]:
    return {(s.name, frozenset(s.labels.items())): (s.value, s.timestamp)
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_a_sample_s_values_are_what_the_raw_graph_draws_at_it():
    before, after = samples()
    stored = series.stored(after, before)
    written = {(name, key): value for name, key, value in
               metrics.interval_values(
                   rates(before, after, after.taken_at - before.taken_at), stored)}
    rows = [(before.taken_at, series.stored(before)), (after.taken_at, stored)]
    for metric in metrics.METRICS.values():
        for found in metrics.raw_series(metric, rows, after.taken_at - before.taken_at):
            at, value = found.points[-1]
            assert at == after.taken_at
            assert written.get((metric.name, found.key)) == (
                None if value is None else pytest.approx(value)), metric.name
    [pg] = [key for name, key in written if name == "tps"]
    assert written[("tps", pg)] > 0  # pgbench ran between the two samples
    assert {key for name, key in written if name == "pool_capacity"} == {"tank"}


def test_the_first_sample_writes_gauges_and_no_rates():
    before, _ = samples()
    names = {name for name, _, _ in metrics.interval_values(
        rates(None, before, STEP), series.stored(before))}
    assert "arc_size" in names and "pool_capacity" in names
    assert not names & {"arc_hit_rate", "tps", "cache_hit", "wal_bytes_per_s", "checkpoints"}


def test_lines_are_the_text_format_with_milliseconds_and_escaped_keys():
    at = datetime(2026, 11, 29, 11, 0, 7, 250000, tzinfo=UTC)
    text = vmformat.lines(12, at, [("pool_capacity", 'ta"n\\k\nx', 20.0),
                                   ("arc_size", None, 1e10), ("dirty", None, float("nan")),
                                   ("writeback", None, float("inf"))])
    odd = frozenset({("host_id", "12"), ("key", 'ta"n\\k\nx')})
    assert parsed(text) == {
        ("pozol_telemetry_pool_capacity", odd): (20.0, at.timestamp()),
        ("pozol_telemetry_arc_size", frozenset({("host_id", "12")})): (1e10, at.timestamp())}
    assert text.count("\n") == 2  # not finite: left out


def test_what_was_written_to_the_real_binary_is_what_the_writer_writes():
    before, after = samples()
    text = (HERE / "import.txt").read_text()
    first = datetime.fromtimestamp(int(text.split("\n", 1)[0].split()[-1]) / 1000, tz=UTC)
    values = metrics.interval_values(rates(before, after, after.taken_at - before.taken_at),
                                     series.stored(after, before))
    assert text.startswith(vmformat.lines(7, first, values))


def test_a_matrix_is_read_per_key_with_a_missed_step_as_a_gap():
    capacity = vmformat.parse_matrix(answer("range-capacity.json"), STEP)
    [(key, points)] = capacity.items()
    assert key == "tank"
    assert [v for _, v in points] == [20.0, 20.0, None, 20.0, 20.0]
    times = [at for at, _ in points]
    assert all(b - a == STEP for a, b in zip(times, times[1:], strict=False))
    [(key, points)] = vmformat.parse_matrix(answer("range-arc-hit-rate.json"), STEP).items()
    assert key is None and [v for _, v in points] == [1.0, 1.0, None, 1.0, 1.0]
    assert vmformat.parse_matrix(answer("range-empty.json"), STEP) == {}


def test_an_error_answer_is_refused():
    body = (HERE / "bad-query.txt").read_text().split("\n", 1)[1]
    import json

    for bad in (json.loads(body), {"status": "success", "data": {"resultType": "vector"}},
                {"status": "success", "data": {"resultType": "matrix", "result": [
                    {"metric": {}, "values": [[1, "x"]]}]}}, "no"):
        with pytest.raises(vmformat.ParseError):
            vmformat.parse_matrix(bad, STEP)


def test_the_query_reads_one_host_and_averages_each_step():
    assert vmformat.range_query("tps", 7, timedelta(hours=1)) == (
        'avg_over_time(pozol_telemetry_tps{host_id="7"}[3600s])')
