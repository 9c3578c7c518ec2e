"""The Metrics tab in Chromium on a real test host, sampled by the collector's own
worker under a real `celery beat`: pgbench load makes the TPS and ARC charts move
without a reload (the charts read their JSON again at the sampling interval), and
the fleet overview shows the host's current values. Screenshot:
test-artifacts/metrics-pgbench.png."""

from __future__ import annotations

import pytest

from apps.ops.models import Operation
from apps.ops.schedule import ensure_periodic_tasks
from apps.telemetry.models import RawSample
from tests import browser as chromium
from tests.driving import drive
from tests.integration.conftest import register
from tests.integration.test_telemetry import pgbench
from tests.waiting import wait_until
from tests.workers import Beat, Worker

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

INTERVAL = "5"  # POZOL_TELEMETRY_INTERVAL's minimum

# The drawn charts' data, by figure id: uPlot keeps [x, ...series] as plot.data.
DRAWN = """(id) => { for (const [figure, chart] of window.pozolCharts.charts) {
  if (figure.id === id && chart.plot) return chart.plot.data; } return null; }"""


def _known(data, series: int = 1) -> list[float]:
    return [v for v in (data or [[]] * (series + 1))[series] if v is not None]


def test_pgbench_moves_the_tps_and_arc_charts_in_the_browser(fleet_hosts, settings, tmp_path,
                                                            live_server, operator):
    fleet_host = fleet_hosts[0]
    env = {"POZOL_TELEMETRY_INTERVAL": INTERVAL}
    collector = Worker("pozol", "graph-collector", tmp_path, queues="telemetry",
                       concurrency=1, **env)
    beat = None
    try:
        host = register(fleet_host, name="graphed")
        discovery = drive(host.operations.get())
        assert discovery.status == Operation.Status.SUCCEEDED, discovery.error
        settings.POZOL = {**settings.POZOL, "TELEMETRY_INTERVAL": int(INTERVAL)}
        ensure_periodic_tasks()
        beat = Beat("pozol", "graph-beat", tmp_path, **env)
        with chromium.session() as playwright:
            browser, page = chromium.signed_in(playwright, live_server.url, operator)
            page.add_init_script(chromium.WATCH_CSP)  # what the page's policy blocks
            assert wait_until(lambda: RawSample.objects.filter(host=host).count() >= 2, 45,
                              0.5), (beat.output()[-2000:], collector.output()[-2000:])
            page.goto(f"{live_server.url}/hosts/{host.pk}/metrics/")
            page.wait_for_function(f"() => ({DRAWN})('chart-arc-hit') !== null")
            page.click("button[data-chart-range='1h']")
            arc_before = len(_known(page.evaluate(DRAWN, "chart-arc-hit")))
            dirty = page.evaluate(DRAWN, "chart-dirty")
            labels = page.locator("#chart-dirty .u-legend").inner_text()
            assert "Dirty" in labels and "TPS" in labels, labels
            tps_series = 1 + page.evaluate(
                "() => [...document.querySelectorAll('#chart-dirty .u-legend .u-series')]"
                ".slice(1).findIndex((row) => row.textContent.includes('TPS'))")
            busy_before = max(_known(dirty, tps_series), default=0)

            pgbench(fleet_host, seconds=8)
            # No reload: the charts read their source again every INTERVAL seconds.
            page.evaluate("window.__sameDocument = true")
            page.wait_for_function(
                f"""() => {{ const d = ({DRAWN})('chart-dirty');
                    return d && Math.max(0, ...d[{tps_series}].filter((v) => v !== null)) > 10;
                }}""", timeout=30_000)
            page.wait_for_function(
                f"""() => {{ const d = ({DRAWN})('chart-arc-hit');
                    return d && d[1].filter((v) => v !== null).length > {arc_before}; }}""",
                timeout=15_000)
            assert page.evaluate("window.__sameDocument") is True
            busy_after = max(_known(page.evaluate(DRAWN, "chart-dirty"), tps_series))
            assert busy_after > max(10, busy_before), (busy_before, busy_after)
            # Hovering shows the value and its time in the legend.
            over = page.locator("#chart-dirty .u-over")
            over.scroll_into_view_if_needed()
            plot = over.bounding_box()
            page.mouse.move(plot["x"] + plot["width"] * 0.98, plot["y"] + plot["height"] / 2)
            legend = page.locator("#chart-dirty .u-legend").inner_text()
            assert "/s" in legend and ":" in legend.split("Dirty")[0], legend  # value, time
            chromium.ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(chromium.ARTIFACTS / "metrics-pgbench.png"),
                            full_page=True)
            page.goto(f"{live_server.url}/?sort=tps")
            row = page.locator("#hosts tbody tr").first
            assert "graphed" in row.inner_text() and row.locator("svg.sparkline").count() >= 1
            assert page.evaluate("window.__violations") == []
            browser.close()
    finally:
        if beat:
            beat.stop()
        collector.stop()
