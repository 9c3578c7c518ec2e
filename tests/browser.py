"""Pages in Debian's Chromium as a person sees them, for the browser tests.

axe-core (pinned in package-lock.json, installed by `make node`) is added to
every page of a context with `add_init_script`: the browser puts it in before
the page's own scripts through the DevTools protocol, so the page keeps its real
Content-Security-Policy (script-src 'self' would refuse an inline <script> from
`add_script_tag`, and bypass_csp would test pages that no user gets).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.test import Client
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
DESKTOP = {"width": 1280, "height": 800}
LAPTOP = {"width": 1366, "height": 768}  # the most common laptop screen
PHONE = {"width": 375, "height": 800}
WIDTHS = {"desktop": DESKTOP, "1366": LAPTOP, "375": PHONE}
# The widths at which no page may scroll sideways (wide tables scroll inside their box).
NO_SIDEWAYS_SCROLL = ("1366", "375")
# What the suite refuses; "minor" and "moderate" findings are left to judgement.
BLOCKING_IMPACTS = ("serious", "critical")


@contextmanager
def session() -> Iterator:
    """Playwright, with the database usable while it runs.

    Playwright's sync API keeps an event loop running in this thread, which Django
    takes for async code and refuses ORM calls in; the tests' own data set-up is
    plain synchronous code, so say so for as long as Playwright runs.
    """
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            yield playwright
    finally:
        if before is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


# Collects what the page's policy blocked; init scripts are injected by the browser,
# not the page, so this one is not blocked itself.
WATCH_CSP = """window.__violations = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__violations.push(e.violatedDirective + " " + e.blockedURI));"""


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)


def signed_in(playwright, url: str, operator):
    """A new browser with one page signed in through the login form, as a person does
    (the operator persona's password is set in tests/conftest.py)."""
    browser = launch(playwright)
    page = browser.new_page()
    log_in(page, url, operator)
    return browser, page


def log_in(page, url: str, operator) -> None:
    """The login form, filled and sent; works with JavaScript off too."""
    page.goto(f"{url}/login/")
    page.fill("input[name=username]", operator.username)
    page.fill("input[name=password]", "pw-olga-123")
    page.click("button:has-text('Sign in')")
    page.wait_for_url(f"{url}/")


def new_context(browser):
    """A browser context whose every page carries axe-core."""
    assert AXE.is_file(), f"{AXE} is missing: run `make node` (npm ci)"
    context = browser.new_context(viewport=DESKTOP)
    context.add_init_script(path=str(AXE))
    return context


def sign_in(context, base_url: str, user) -> None:
    """Put a real Django session for `user` into the context: no login form per test.

    The context's pages are parked on about:blank first. A page left open by the
    test before may still poll with its old cookie, whose session that test's
    flush removed; Django answers such a request by deleting the cookie, and if
    that answer lands after the new cookie is added it signs the new user out.
    """
    for page in context.pages:
        page.goto("about:blank")
    client = Client()
    client.force_login(user)
    context.clear_cookies()
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "url": base_url,
                          "value": client.cookies[settings.SESSION_COOKIE_NAME].value}])


def axe_violations(page) -> list[dict]:
    """axe-core's violations on the page as it is now, serious and critical only."""
    results = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [v for v in results["violations"] if v["impact"] in BLOCKING_IMPACTS]


def describe(violations: list[dict]) -> str:
    """One paragraph per rule: what it is, where, and axe's own explanation."""
    lines = []
    for violation in violations:
        lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']}"
                     f" <{violation['helpUrl']}>")
        for node in violation["nodes"][:8]:
            lines.append(f"    at {' '.join(node['target'])}: {node['html'][:160]}")
            lines.append(f"      {node['failureSummary'].replace(chr(10), ' ')[:300]}")
        if len(violation["nodes"]) > 8:
            lines.append(f"    ... and {len(violation['nodes']) - 8} more")
    return "\n".join(lines)


def sideways_scroll(page) -> int:
    """How many pixels the page is wider than the window (0: no sideways scroll)."""
    return page.evaluate(
        "() => Math.max(0, document.documentElement.scrollWidth - window.innerWidth)")


def scrolled_boxes(page) -> list[str]:
    """Boxes that scroll sideways inside the page (a table wider than its .scroll box):
    columns a reader must scroll to see."""
    return page.evaluate("""() => [...document.querySelectorAll('.scroll, table.grid')]
        .filter(e => e.scrollWidth > e.clientWidth + 1)
        .map(e => `${e.tagName.toLowerCase()}#${e.id} by ${e.scrollWidth - e.clientWidth}px`)""")


def widest_elements(page, limit: int = 5) -> list[str]:
    """The elements that stick out past the window's right edge, for a failure message."""
    return page.evaluate("""limit => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
        .filter(e => !(e.parentElement && e.parentElement.closest('table.grid, pre')))
        .slice(0, limit)
        .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
             + (typeof e.className === 'string' && e.className
                ? '.' + e.className.split(' ').join('.') : '')
             + ' right=' + Math.round(e.getBoundingClientRect().right))""", limit)


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
