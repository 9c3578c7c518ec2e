"""In headless Chromium: the host page's tabs swap just the section (htmx) and push
its URL, Back returns, the tabs work with JavaScript off, and the overview keeps
up with a running operation without a reload. Screenshots of the host page and
the overview at desktop and 375 px go to test-artifacts/."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect, sync_playwright

from apps.ops.models import Operation
from tests.browser import ARTIFACTS, PHONE, log_in, signed_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

def test_tabs_swap_the_section_and_keep_their_urls(live_server, operator, replayed_host):
    host_url = f"{live_server.url}/hosts/{replayed_host.pk}/"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser, page = signed_in(playwright, live_server.url, operator)
        page.goto(host_url)
        expect(page.locator("nav.tabs a[aria-current=page]")).to_have_text("Overview")
        page.evaluate("window.__sameDocument = true")  # gone if the page reloads

        page.click("nav.tabs a:has-text('Datasets')")
        page.locator("#datasets").wait_for()
        assert page.url == f"{host_url}datasets/"
        expect(page.locator("nav.tabs a[aria-current=page]")).to_have_text("Datasets")
        assert page.evaluate("window.__sameDocument") is True
        page.screenshot(path=str(ARTIFACTS / "host-page-datasets.png"), full_page=True)

        page.click("nav.tabs a:has-text('Tuning')")
        page.locator("#tuning").wait_for()
        assert page.url == f"{host_url}tuning/" and page.evaluate("window.__sameDocument")

        page.go_back()
        page.locator("#datasets").wait_for()
        expect(page.locator("nav.tabs a[aria-current=page]")).to_have_text("Datasets")

        page.set_viewport_size(PHONE)
        page.goto(host_url)
        page.screenshot(path=str(ARTIFACTS / "host-tabs-375.png"), full_page=True)
        section = page.locator("#host-sections")
        assert section.evaluate("e => e.getBoundingClientRect().right") <= PHONE["width"]

        without_js = browser.new_context(java_script_enabled=False).new_page()
        log_in(without_js, live_server.url, operator)
        without_js.goto(host_url)
        without_js.click("nav.tabs a:has-text('PostgreSQL')")
        without_js.locator("div.cluster").first.wait_for()
        assert without_js.url == f"{host_url}postgresql/"
        browser.close()


def test_the_overview_keeps_up_with_a_running_operation(live_server, operator, replayed_host):
    running = Operation.objects.create(kind="benchmarks.run", host=replayed_host,
                                       subject=replayed_host.name,
                                       status=Operation.Status.RUNNING)
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser, page = signed_in(playwright, live_server.url, operator)
        cell = page.locator("#hosts td.running")
        expect(cell).to_have_text(f"#{running.pk} benchmarks.run")
        page.screenshot(path=str(ARTIFACTS / "overview-running.png"), full_page=True)
        page.evaluate("window.__sameDocument = true")

        # Playwright runs an event loop in this thread: the ORM is used from another.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(Operation.objects.filter(pk=running.pk).update,
                        status=Operation.Status.SUCCEEDED).result()
        expect(cell).to_have_text("nothing", timeout=10_000)
        assert page.evaluate("window.__sameDocument") is True
        assert page.locator("#fleet").get_attribute("hx-trigger") is None  # polling stopped

        page.set_viewport_size(PHONE)
        page.reload()
        page.screenshot(path=str(ARTIFACTS / "overview-running-375.png"), full_page=True)
        browser.close()
