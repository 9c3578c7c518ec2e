"""The tuning card, a plan and a validation in real Chromium under the site's CSP:
unassigning and rolling back ask first (a dismissed question changes nothing),
and the pages are saved as screenshots in test-artifacts/."""

from __future__ import annotations

import pytest
from django.db import connections
from playwright.sync_api import sync_playwright

from apps.benchmarks.models import Validation
from apps.tuning import services
from apps.tuning.models import Assignment, Plan, PlanChange, Profile
from tests.benchmarks import factories
from tests.browser import ARTIFACTS, WATCH_CSP, signed_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def applied_plan(host) -> Plan:
    services.assign(host, Profile.objects.get(slug="oltp-safe"))
    plan = services.make_plan(host)
    Plan.objects.filter(pk=plan.pk).update(status=Plan.Status.APPLIED)
    plan.changes.filter(key="vm.dirty_bytes").update(
        status=PlanChange.Status.APPLIED, after="1073741824",
        before={"value": "0", "partner": {"name": "vm.dirty_ratio", "value": "20"}})
    return plan


def test_unassign_and_rollback_ask_first_and_pages_keep_the_policy(
        live_server, operator, replayed_host, delivered, monkeypatch):
    # The checks between clicks read the database inside Playwright's event loop.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    host = replayed_host
    plan = applied_plan(host)
    bench_host = factories.host("bench-db")
    validation = Validation.objects.create(
        host=bench_host, before=factories.finished(bench_host, 1000.0, 2.0, 400.0),
        after=factories.finished(bench_host, 1300.0, 1.5, 380.0), label="16K records")
    answers: list[bool] = []
    questions: list[str] = []

    def answer(dialog) -> None:
        questions.append(dialog.message)
        dialog.accept() if answers.pop(0) else dialog.dismiss()

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser, page = signed_in(playwright, live_server.url, operator)
        page.add_init_script(WATCH_CSP)
        page.on("dialog", answer)

        page.goto(f"{live_server.url}/tuning/plans/{plan.pk}/")
        assert page.locator("tr.hazard").count() == 1
        page.screenshot(path=str(ARTIFACTS / "tuning-plan-hazards.png"), full_page=True)
        answers.append(False)
        page.click("button:has-text('Roll back')")
        assert not Plan.objects.filter(rollback_of=plan).exists()
        answers.append(True)
        page.click("button:has-text('Roll back')")
        page.wait_for_url("**/operations/**")
        back = Plan.objects.get(rollback_of=plan)
        page.goto(f"{live_server.url}/tuning/plans/{back.pk}/")
        assert page.title().startswith(f"Rollback #{back.pk}")
        page.screenshot(path=str(ARTIFACTS / "tuning-rollback.png"), full_page=True)
        assert page.evaluate("window.__violations") == []

        page.goto(f"{live_server.url}/hosts/{host.pk}/tuning/")
        page.locator("#tuning").screenshot(path=str(ARTIFACTS / "tuning-card.png"))
        answers.append(False)
        page.click("button:has-text('Unassign')")
        assert Assignment.objects.filter(host=host).exists()
        answers.append(True)
        page.click("button:has-text('Unassign')")
        page.wait_for_selector("text=Nothing on the host was changed")
        assert not Assignment.objects.filter(host=host).exists()
        assert page.evaluate("window.__violations") == []

        page.goto(f"{live_server.url}/benchmarks/validations/{validation.pk}/")
        assert page.locator("#charts svg.chart").count() == 3
        page.screenshot(path=str(ARTIFACTS / "validation-shared-axes.png"), full_page=True)
        assert page.evaluate("window.__violations") == []
        browser.close()
        connections.close_all()  # the connection opened inside the event loop is its own

    assert questions[0].startswith(f"Roll back plan #{plan.pk} on db1?")
    assert questions[2].startswith("Stop following OLTP on ZFS (safe) on db1?")
    assert len(questions) == 4
