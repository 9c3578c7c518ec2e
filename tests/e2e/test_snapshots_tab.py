"""In headless Chromium: the Snapshots tab's table sorts by used and by time (static/
pozol.js), and the page is screenshotted with held, cloned and received snapshots."""

from __future__ import annotations

import pytest
from playwright.sync_api import sync_playwright

from tests.browser import ARTIFACTS, signed_in
from tests.snapshots import factories as snapshot_factories

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_snapshot_table_sorts_by_size_and_time(live_server, operator, replayed_host):
    for full_name, used, changes in [
            ("tank/pg@pozol_manual_20261123T190000Z", 300, {"userrefs": 1}),
            ("tank/pg/data@hand1", 100, {"origin": "hand", "properties": {},
                                          "clones": ["tank/clone1"]}),
            ("tank/recv@s2", 200, {"origin": "received"})]:
        snapshot_factories.snapshot(replayed_host, full_name, used=used, **changes)
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser, page = signed_in(playwright, live_server.url, operator)
        page.goto(f"{live_server.url}/hosts/{replayed_host.pk}/snapshots/")

        def names() -> list[str]:
            return page.locator("#host-snapshots tbody tr td:first-child").all_inner_texts()

        page.click("#host-snapshots button:has-text('Used')")
        assert names() == ["tank/pg/data@hand1", "tank/recv@s2",
                           "tank/pg@pozol_manual_20261123T190000Z"]
        assert page.locator("th[aria-sort=ascending]").inner_text().startswith("Used")
        page.click("#host-snapshots button:has-text('Used')")
        assert names()[0] == "tank/pg@pozol_manual_20261123T190000Z"
        page.click("#host-snapshots button:has-text('Created')")
        assert page.locator("th[aria-sort=ascending]").inner_text().startswith("Created")
        assert page.locator("th[aria-sort]").count() == 1
        page.screenshot(path=str(ARTIFACTS / "host-snapshots.png"), full_page=True)
        browser.close()
