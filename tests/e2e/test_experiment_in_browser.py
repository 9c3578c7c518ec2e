"""An experiment created from a template in real Chromium under the site's CSP: a bad
value comes back as a message, a good form starts the Operation and opens the
experiment's page, which shows the table, the verdict and the chart data once runs end.
(The runs themselves on a real host are tests/experiments/test_on_a_host.py's.)"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from apps.experiments.models import Experiment, Run
from apps.ops.models import Operation
from tests.browser import ARTIFACTS, WATCH_CSP, session, signed_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def finish(exp: Experiment) -> None:
    """The runs as the worker records them (WAL figures like the test host's)."""
    now = timezone.now()
    for i, (value, tps, wal) in enumerate([("on", 300, 3550), ("off", 570, 510),
                                           ("off", 560, 520), ("on", 310, 3500)]):
        Run.objects.create(experiment=exp, position=i, value=value, repetition=i // 2,
                           tps=tps, wal_per_tx=wal, checkpoints=2,
                           ended_at=now + timedelta(seconds=i))
    Operation.objects.filter(pk=exp.operation_id).update(status="succeeded", progress=100)
    Experiment.objects.filter(pk=exp.pk).update(restored=True,
                                                original={"varied": {"value": "on"}})


def test_create_from_a_template_and_read_the_results(live_server, operator, replayed_host,
                                                     delivered):
    ARTIFACTS.mkdir(exist_ok=True)
    with session() as playwright:
        browser, page = signed_in(playwright, live_server.url, operator)
        page.add_init_script(WATCH_CSP)
        page.goto(f"{live_server.url}/experiments/")
        page.select_option("select[name=template]", "full-page-writes")
        page.fill("input[name=values]", "on, off; reboot")
        page.click("#new-experiment button")
        page.wait_for_selector("text=values:")
        assert not Experiment.objects.exists()

        page.fill("input[name=values]", "")
        page.fill("input[name=duration]", "5")
        page.fill("input[name=scale]", "1")
        page.click("#new-experiment button")
        page.wait_for_url("**/experiments/*/")
        exp = Experiment.objects.get()
        assert exp.workload["duration"] == 5 and exp.values == ["on", "off"]
        assert exp.operation.kind == "experiments.run" and exp.operation.trigger == "ui"
        assert page.locator("#experiment-status").inner_text() == "pending"

        finish(exp)
        page.reload()
        assert "off wins" in page.locator("#verdict").inner_text()
        assert page.locator("#results tbody tr").count() == 2
        assert page.locator("#runs tbody tr").count() == 4
        chart = json.loads(page.locator(f"#exp-{exp.pk}-chart-0").inner_text())
        assert [s["label"] for s in chart["series"]] == ["on", "off"]
        assert "The host was restored" in page.content()
        page.screenshot(path=str(ARTIFACTS / "experiment.png"), full_page=True)
        assert page.evaluate("window.__violations") == []
        browser.close()
    connections.close_all()
