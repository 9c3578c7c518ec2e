"""Stored XSS: every page rendered with hostile names in real Chromium, over a live
server, under the site's Content-Security-Policy. Nothing may run (no dialog but
the one confirm we ask for) and the policy must report no violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import sync_playwright

from apps.accounts.models import ApiToken
from apps.benchmarks.models import Validation
from apps.tuning import services as tuning
from apps.tuning.models import Plan
from tests.benchmarks import factories
from tests.browser import WATCH_CSP, launch

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Breaks out of a JavaScript string in an attribute, then out of the attribute and tag.
IN_JS = "');alert(1)//<img src=x onerror=alert(2)>"
IN_HTML = '"><script>alert(3)</script><svg onload=alert(4)>'


@pytest.fixture
def hostile(operator):
    host = factories.host(IN_JS[:63])
    other = factories.host(IN_HTML[:63])
    profile = tuning.create_profile(name=IN_JS, description=IN_HTML,
                                    settings={"postgres": {"wal_buffers": "8MB"}})
    before = factories.finished(host, 100.0, 2.0, 500.0, profile_version_label=IN_HTML)
    after = factories.finished(host, 120.0, 1.5, 400.0, profile_version_label=IN_JS)
    before.operation.subject = IN_HTML
    before.operation.save()
    validation = Validation.objects.create(host=host, before=before, after=after, label=IN_JS)
    plan = Plan.objects.create(host=host, profile_version=profile.current)
    ApiToken.objects.issue(operator, IN_JS)
    return {"host": host, "other": other, "profile": profile, "bench": before,
            "validation": validation, "plan": plan}


def pages(objects: dict) -> list[str]:
    return [
        "/", f"/hosts/{objects['host'].pk}/", f"/hosts/{objects['other'].pk}/",
        *(f"/hosts/{objects['host'].pk}/{section}/"
          for section in ("datasets", "postgresql", "tuning", "benchmarks", "operations")),
        "/operations/", f"/operations/{objects['bench'].operation.pk}/",
        "/tuning/profiles/", f"/tuning/profiles/{objects['profile'].pk}/",
        f"/tuning/profiles/{objects['profile'].pk}/edit/", f"/tuning/plans/{objects['plan'].pk}/",
        "/benchmarks/", f"/benchmarks/{objects['bench'].pk}/",
        f"/benchmarks/validations/{objects['validation'].pk}/", "/hosts/add/",
        "/api/docs/", "/admin/", "/admin/accounts/apitoken/", "/admin/fleet/host/",
    ]


def test_hostile_names_never_run_and_no_page_breaks_the_policy(live_server, operator,
                                                                  hostile):
    operator.is_superuser = True
    operator.save()
    dialogs: list[str] = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page()
        page.add_init_script(WATCH_CSP)
        console: list[str] = []
        page.on("console", lambda message: console.append(message.text))
        page.on("dialog", lambda dialog: (dialogs.append(f"{dialog.type}: {dialog.message}"),
                                          dialog.dismiss()))
        page.goto(f"{live_server.url}/login/")
        page.fill("input[name=username]", operator.username)
        page.fill("input[name=password]", "pw-olga-123")
        page.click("button:has-text('Sign in')")
        page.wait_for_url(f"{live_server.url}/")

        for path in pages(hostile):
            response = page.goto(f"{live_server.url}{path}")
            page.wait_for_load_state("networkidle")
            assert response.status == 200, (path, response.status)
            assert "script-src 'self'" in response.headers["content-security-policy"]
            assert page.evaluate("window.__violations") == [], path
        page.goto(f"{live_server.url}/api/docs/")
        page.locator(".swagger-ui .info").wait_for()  # Swagger UI really started, no violation
        assert page.evaluate("window.__violations") == []

        # The one dialog we want: the delete confirmation, with the name as plain text.
        page.goto(f"{live_server.url}/tuning/profiles/{hostile['profile'].pk}/")
        page.click("button:has-text('Delete')")
        page.goto(f"{live_server.url}/hosts/{hostile['host'].pk}/")
        page.click("button:has-text('Remove host from PoZoL')")
        browser.close()

    assert dialogs == [f"confirm: Delete {IN_JS}? A profile plans were made from is archived "
                       "instead.",
                       f"confirm: Remove {IN_JS[:63]} from PoZoL?"]
    assert not [line for line in console if "Content Security Policy" in line], console
    # Dismissed, so nothing was deleted.
    assert type(hostile["profile"]).objects.filter(pk=hostile["profile"].pk).exists()
    assert type(hostile["host"]).objects.filter(pk=hostile["host"].pk).exists()
