"""A run's page: pgbench's series as chart JSON for uPlot (the SVG stays as the
fallback), and the host's telemetry from before the run to the drain after it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from apps.benchmarks.services import DRAIN, telemetry_window
from apps.benchmarks.templatetags.charts import chart_json
from apps.ops.models import Operation
from tests.benchmarks import factories
from tests.html import parse

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 20, 1, tzinfo=UTC)  # long past


def test_the_json_keeps_gaps_and_puts_two_runs_on_one_axis():
    data = chart_json("tps", "TPS", "", [("before", {"t": [1, 2, 3], "tps": [5, None, 7]}),
                                         ("after", {"t": [2, 3, 4], "tps": [8, 9, 10]})])
    assert data["x"] == [1, 2, 3, 4] and data["xlabel"] == "seconds since start"
    assert [s["values"] for s in data["series"]] == [[5, None, 7, None], [None, 8, 9, 10]]


def test_the_window_runs_from_before_the_start_to_the_drain_after_the_end():
    host = factories.host()
    bench = factories.finished(host, 100.0, 1.0, 10.0)
    assert telemetry_window(bench) is None  # never started: nothing to show
    Operation.objects.filter(pk=bench.operation_id).update(
        started_at=T0, finished_at=T0 + timedelta(seconds=70))
    bench.operation.refresh_from_db()
    window = telemetry_window(bench, now=T0 + timedelta(minutes=5))
    assert window.start == int((T0 - timedelta(minutes=2)).timestamp())
    assert window.end == int((T0 + timedelta(seconds=70) + DRAIN).timestamp())
    assert window.ongoing and not telemetry_window(bench, now=T0 + timedelta(hours=1)).ongoing
    Operation.objects.filter(pk=bench.operation_id).update(finished_at=None)
    bench.operation.refresh_from_db()
    assert telemetry_window(bench, now=T0).end == int((T0 + timedelta(seconds=5) + DRAIN)
                                                      .timestamp())  # its duration, 5 s


def test_the_run_page_carries_chart_data_and_the_hosts_telemetry(signed_in):
    host = factories.host()
    bench = factories.finished(host, 100.0, 1.0, 10.0)
    Operation.objects.filter(pk=bench.operation_id).update(
        started_at=T0, finished_at=T0 + timedelta(seconds=70))
    page = parse(signed_in.get(f"/benchmarks/{bench.pk}/").content)
    tps = page.find("figure", **{"data-chart": "chart-data-tps"})
    assert tps.find("svg", id="chart-tps")  # the fallback
    data = json.loads(page.find("script", id="chart-data-tps").text)
    assert data["series"][0]["values"] == [100.0, 110.00000000000001, 90.0]
    figures = page.find("section", id="run-telemetry").find_all("figure")
    start, end = int((T0 - timedelta(minutes=2)).timestamp()), int((T0 + timedelta(
        seconds=70) + DRAIN).timestamp())
    assert [f.attrs["data-chart-src"] for f in figures] == [
        f"/telemetry/hosts/{host.pk}/charts/{chart}/?from={start}&to={end}"
        for chart in ("dirty", "arc-hit")]
    assert "data-chart-refresh" not in figures[0].attrs  # long over: nothing to refresh
    assert signed_in.get(figures[0].attrs["data-chart-src"]).status_code == 200
