"""Experiments end to end (issue 12): an operator in Chromium, under the site's CSP, a
real Celery worker and a real test host. From the form, with a short workload, the
full_page_writes experiment and the recordsize (8K/16K) experiment run; the page follows
each Operation without a reload (the first run's figures appear while the second runs)
and, when it ends, shows the verdict, the table and uPlot charts drawn on their canvas;
the host has its setting and properties back; the API reads the same results. A third
experiment, cancelled from its page in the middle of a run, stops the run and puts the
host back too. A bad value is refused by the form first.
Screenshots: test-artifacts/experiment-*.png."""

from __future__ import annotations

import pytest

from apps.experiments.models import Experiment
from tests.browser import WATCH_CSP, screenshot, session, signed_in
from tests.experiments.test_on_a_host import registered
from tests.integration.conftest import run_on, show

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

WAIT_MS = 180_000
ACTIVE = '["pending", "waiting", "running"]'
# One run per value, scale 1, 5 s, a CHECKPOINT every 2 s so that each run crosses some.
SHORT = {"repetitions": "1", "duration": "5", "scale": "1", "checkpoint_every": "2"}

# Per chart: how many of its canvas pixels have the colour of each value's series (the
# first two colours of static/pozol-charts.js), or null while it is not drawn.
PAINTED = """(id) => {
  const figure = document.querySelector(`figure[data-chart="${id}"]`);
  const canvas = figure && figure.classList.contains("drawn") && figure.querySelector("canvas");
  if (!canvas) return null;
  const {data} = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
  const colours = [[0x0e, 0x74, 0x90], [0xb4, 0x53, 0x09]];
  const counts = colours.map(() => 0);
  for (let i = 0; i < data.length; i += 4) {
    if (!data[i + 3]) continue;
    colours.forEach(([r, g, b], k) => {
      if (Math.abs(data[i] - r) <= 6 && Math.abs(data[i + 1] - g) <= 6
          && Math.abs(data[i + 2] - b) <= 6) counts[k] += 1;
    });
  }
  return counts;
}"""


def start(page, url: str, template: str, values: str = "", **fields: str) -> None:
    page.goto(f"{url}/experiments/")
    page.select_option("select[name=template]", template)
    page.fill("input[name=values]", values)
    for name, value in {**SHORT, **fields}.items():
        page.fill(f"input[name={name}]", value)
    page.click("#new-experiment button")


def started(page) -> Experiment:
    page.wait_for_url("**/experiments/*/")
    exp = Experiment.objects.select_related("operation").get(
        pk=int(page.url.rstrip("/").rpartition("/")[2]))
    assert exp.operation.trigger == "ui"
    assert page.inner_text("#experiment-status") in ("pending", "waiting", "running"), \
        page.inner_text("#live")
    page.evaluate("window.__sameDocument = true")
    return exp


def followed_to_the_end(page, exp: Experiment) -> None:
    """Without a reload the first run's TPS shows while the operation still runs, then
    the operation's end; each chart is drawn with a bar of each value."""
    page.wait_for_function("""() => {
        const tps = document.querySelector("#runs tbody tr:first-child td:nth-child(3)");
        const status = document.querySelector("#experiment-status").textContent;
        return tps && tps.textContent !== "—" && ["running", "waiting"].includes(status);
    }""", timeout=WAIT_MS)
    page.wait_for_function(f"() => !{ACTIVE}.includes("
                           "document.querySelector('#experiment-status').textContent)",
                           timeout=WAIT_MS)
    assert page.evaluate("window.__sameDocument") is True
    assert page.inner_text("#experiment-status") == "succeeded", page.inner_text("#live")
    charts = page.locator("#live figure[data-chart]")
    assert charts.count() == 3  # TPS, WAL per transaction, compression ratio
    for i in range(charts.count()):
        chart = charts.nth(i).get_attribute("data-chart")
        assert chart == f"exp-{exp.pk}-chart-{i}"
        page.wait_for_function(f"() => ({PAINTED})('{chart}') !== null")
        painted = page.evaluate(PAINTED, chart)
        assert all(painted), (chart, painted)


def results(api, exp: Experiment) -> dict:
    body = api.get(f"/api/experiments/{exp.pk}/").json()
    assert body["status"] == "succeeded" and body["restored"], body["operation"]["error"]
    exp.operation.refresh_from_db()
    print(f"\n{exp.template}: {took(exp)} s,", end=" ")
    assert all(run["tps"] > 0 and run["checkpoints"] >= 1 for run in body["runs"])
    return body


def took(exp: Experiment) -> float:
    return round((exp.operation.finished_at - exp.operation.started_at).total_seconds(), 1)


def zfs(fleet_host, dataset: str) -> str:
    return run_on(fleet_host, f"zfs get -H -o property,value,source recordsize,compression "
                              f"{dataset}")


def test_experiments_run_on_a_host_from_the_browser(fleet_hosts, live_server, operator, api,
                                                    worker):
    fleet_host, url = fleet_hosts[0], live_server.url
    host = registered(fleet_host)
    data = host.clusters.get().data_dataset.name
    before = {"full_page_writes": show(fleet_host, "full_page_writes"),
              "zfs": zfs(fleet_host, data)}
    with session() as playwright:
        browser, page = signed_in(playwright, url, operator)
        page.add_init_script(WATCH_CSP)
        page.on("dialog", lambda dialog: dialog.accept())

        start(page, url, "full-page-writes", "on, off; reboot")
        page.wait_for_selector("text=values:")
        assert not Experiment.objects.exists()

        start(page, url, "full-page-writes")
        fpw = started(page)
        assert fpw.values == ["on", "off"] and fpw.workload["duration"] == 5
        followed_to_the_end(page, fpw)
        assert "no spread" in page.inner_text("#verdict")  # one run per value
        assert page.locator("#results tbody tr").count() == 2
        assert "The host was restored: full_page_writes back to" in page.inner_text("#live")
        screenshot(page, "experiment-full-page-writes")
        runs = {run["value"]: run for run in results(api, fpw)["runs"]}
        print("tps, WAL/tx, checkpoints:", {v: (round(r["tps"]), round(r["wal_per_tx"]),
                                                r["checkpoints"]) for v, r in runs.items()})
        assert runs["off"]["wal_per_tx"] < runs["on"]["wal_per_tx"]
        assert show(fleet_host, "full_page_writes") == before["full_page_writes"]

        start(page, url, "recordsize", "8K, 16K")
        recordsize = started(page)
        assert recordsize.target == data and recordsize.held[0]["key"] == "compression"
        assert recordsize.title == "recordsize 8K/16K"  # not the template's four values
        followed_to_the_end(page, recordsize)
        assert "The host was restored: recordsize back to" in page.inner_text("#live")
        screenshot(page, "experiment-recordsize")
        runs = results(api, recordsize)["runs"]
        print("tps, compressratio:", [(r["value"], round(r["tps"]), r["compressratio"])
                                      for r in runs])
        assert [run["value"] for run in runs] == ["8K", "16K"]
        # compression is held on for the whole experiment: the rewritten data compresses.
        assert all(run["compressratio"] > 1 for run in runs)
        assert zfs(fleet_host, data) == before["zfs"]

        # Cancelled in the middle of its first run (16K, compression on), from its page.
        start(page, url, "recordsize", "16K, 8K", duration="20")
        cancelled = started(page)
        # pgbench runs (the step's message) on the host with 16K set.
        page.wait_for_function(f"""() => document.querySelector("#live").textContent
            .includes("run 1/2:") && {ACTIVE}.includes(
            document.querySelector("#experiment-status").textContent)""", timeout=WAIT_MS)
        changed = zfs(fleet_host, data)
        assert "16K\tlocal" in changed and "compression\ton\tlocal" in changed, changed
        page.click("#cancel-experiment button")
        page.wait_for_selector("#experiment-status:text('cancelled')", timeout=WAIT_MS)
        live = page.inner_text("#live")
        assert "cancelled by olga; the host was restored" in live, live
        assert "The host was restored: recordsize back to" in live
        assert "compression back to" in live  # the held one too
        screenshot(page, "experiment-cancelled")
        assert page.evaluate("window.__violations") == []
        browser.close()
    assert zfs(fleet_host, data) == before["zfs"]
    cancelled.refresh_from_db()
    assert cancelled.restored and cancelled.operation.error_code == "cancelled"
    print(f"cancelled: {took(cancelled)} s")
    assert cancelled.runs.get().ended_at is None  # the run was stopped, not measured
    # pgbench's unit ended when cancelled (it would have run 20 s) and left its status.
    status = f"{host.work_dir}/op{cancelled.operation_id}-run0.status"
    assert run_on(fleet_host, f"test -e {status} && echo ended").strip() == "ended"
