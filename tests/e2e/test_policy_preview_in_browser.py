"""In headless Chromium: the htmx "Preview the prune" button lists what lowering a
policy's count would destroy, and Save keeps the policy until that change is confirmed."""

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import sync_playwright

from apps.snapshots.models import PolicyAssignment, SnapshotPolicy
from tests.browser import ARTIFACTS, signed_in
from tests.snapshots import factories

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

NOW = datetime(2026, 11, 23, 19, 0, tzinfo=UTC)


def test_preview_then_confirm_a_change_that_prunes(live_server, operator):
    host = factories.host()
    policy = SnapshotPolicy.objects.create(name="often", frequently=3, frequent_minutes=1)
    PolicyAssignment.objects.create(policy=policy, host=host, dataset="tank/pg/data")
    for minute in range(3):
        at = NOW + timedelta(minutes=minute)
        factories.snapshot(host, f"tank/pg/data@pozol_often_{minute}", created_at=at,
                           properties={"pozol:owner": "pozol", "pozol:policy": "often",
                                       "pozol:taken": at.strftime("%Y%m%dT%H%M%SZ")})
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser, page = signed_in(playwright, live_server.url, operator)
        page.goto(f"{live_server.url}/snapshots/policies/{policy.pk}/")
        page.get_by_label("Frequent snapshots to keep").fill("1")
        page.get_by_role("button", name="Preview the prune").click()
        listed = page.locator("#preview .preview-destroy")
        listed.wait_for()
        text = listed.inner_text()
        assert "pozol_often_0" in text and "pozol_often_1" in text
        assert "pozol_often_2" not in text
        page.screenshot(path=str(ARTIFACTS / "policy-preview.png"), full_page=True)
        page.get_by_role("button", name="Save", exact=True).click()
        page.get_by_text("Save again to confirm").wait_for()  # not saved yet
        page.get_by_role("button", name="Save", exact=True).click()
        page.wait_for_load_state()
        assert "Save again to confirm" not in page.content()
        assert page.get_by_label("Frequent snapshots to keep").input_value() == "1"
        browser.close()
    policy.refresh_from_db()
    assert policy.frequently == 1
