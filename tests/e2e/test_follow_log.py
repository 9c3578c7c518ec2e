"""End to end: an operator follows a long operation's log in headless Chromium,
a tuning apply that restarts PostgreSQL and a benchmark.

A real Celery worker runs a pgbench benchmark (initialise, then run for some
seconds, polled every second, each poll logging its commands) on a real test
host, while the browser sits on the operation's page. The log must grow by
appending (the first line stays the very same DOM node, the line count only
rises), stay scrolled to its newest line while "Follow" is ticked, and end
with the operation's last line; scrolling up by hand stops following. The
operations and benchmarks lists, opened meanwhile, show the end without a
reload, and the operations list filters by kind.
"""

import time

import pytest
from playwright.sync_api import sync_playwright

from apps.benchmarks import services as benchmarks
from apps.ops.models import Operation
from apps.tuning import services as tuning
from tests.browser import ARTIFACTS, signed_in
from tests.browser import session as browser_session
from tests.integration.conftest import register
from tests.workers import Worker

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

RUN = {"clients": 2, "threads": 1, "duration": 8, "init": True, "scale": 1}
ENDED = {"succeeded", "failed", "cancelled"}

# What the page shows of its log at one moment, read in one go in the browser.
SNAPSHOT = """() => {
  const log = document.getElementById("op-log");
  const ids = [...log.querySelectorAll("span")].map((line) => line.id);
  return {ids, status: document.getElementById("op-status").textContent.trim(),
          following: document.getElementById("follow-log").checked,
          overflows: log.scrollHeight > log.clientHeight,
          fromBottom: log.scrollHeight - log.scrollTop - log.clientHeight};
}"""


def wait_until_ended(operation: Operation, runner: Worker, seconds: float) -> Operation:
    deadline = time.monotonic() + seconds
    while operation.status not in ENDED:
        assert time.monotonic() < deadline, (operation, runner.output()[-3000:])
        time.sleep(0.3)
        operation.refresh_from_db()
    return operation


def follow_to_the_end(page, url: str, operation: Operation, runner: Worker,
                      screenshot: str) -> tuple[dict, str]:
    """Sit on the operation's page until it ends; the log must only ever grow by
    appending and stay at its newest line while it overflows its box."""
    page.goto(f"{url}/operations/{operation.pk}/")
    first = page.locator("#op-log span").first
    first.wait_for()
    first_node = first.element_handle()
    first_id = first_node.get_attribute("id")

    snapshots = []
    deadline = time.monotonic() + 60
    while not snapshots or snapshots[-1]["status"] not in ENDED:
        assert time.monotonic() < deadline, (snapshots[-1:], runner.output()[-3000:])
        snapshots.append(page.evaluate(SNAPSHOT))
        page.wait_for_timeout(250)
    page.wait_for_timeout(1500)  # one more poll would bring lines a last one missed
    snapshots.append(page.evaluate(SNAPSHOT))
    page.screenshot(path=str(ARTIFACTS / f"{screenshot}.png"), full_page=True)

    final = snapshots[-1]
    assert final["status"] == "succeeded", runner.output()[-3000:]
    # The times are part of what the poll replaces: the page says when it ended.
    assert "finished not yet" not in page.locator("#op-times").inner_text()
    counts = [len(s["ids"]) for s in snapshots]
    assert counts == sorted(counts) and counts[-1] > counts[0], counts
    for earlier, later in zip(snapshots, snapshots[1:], strict=False):
        assert later["ids"][:len(earlier["ids"])] == earlier["ids"], "lines were lost"
    assert first_node.evaluate("line => line.isConnected") and final["ids"][0] == first_id

    last_line = page.locator("#op-log span").last.inner_text()
    overflowing = [s for s in snapshots if s["overflows"]]
    assert len(overflowing) >= 3, "the log never grew past its box; nothing to follow"
    assert all(s["following"] and s["fromBottom"] <= 8 for s in overflowing), overflowing
    return final, last_line


def test_follow_a_benchmark_log_to_its_end(live_server, worker, operator,
                                          fleet_hosts):
    host = register(fleet_hosts[1], name="followed")
    discovery = wait_until_ended(host.operations.get(), worker, 60)
    assert discovery.status == "succeeded", discovery.error

    ARTIFACTS.mkdir(exist_ok=True)
    with browser_session() as playwright:
        browser, page = signed_in(playwright, live_server.url, operator)
        # A short window, so the log (at most 60% of it high) overflows within seconds.
        page.set_viewport_size({"width": 1000, "height": 520})
        session = browser.new_context(storage_state=page.context.storage_state())
        lists = {path: session.new_page() for path in ("/operations/", "/benchmarks/")}
        # Started once the browser is up: on a loaded machine Chromium's start took
        # longer than the whole run, and the page then saw only its end.
        operation = benchmarks.run_benchmark(host, None, RUN).operation
        # The lists, opened while the run is active, must show its end without a reload.
        for path, listing in lists.items():
            listing.goto(f"{live_server.url}{path}")
        final, last_line = follow_to_the_end(page, live_server.url, operation, worker,
                                             "operation-follow-log")
        page.locator("#op-log").hover()
        page.mouse.wheel(0, -400)
        page.wait_for_function("() => !document.getElementById('follow-log').checked")
        page.locator("#follow-log").check()
        page.wait_for_function("""() => { const log = document.getElementById("op-log");
            return log.scrollHeight - log.scrollTop - log.clientHeight <= 8; }""")

        for path, table in (("/operations/", "#operations"), ("/benchmarks/", "#benchmarks")):
            row = lists[path].locator(f"{table} tbody tr").first
            row.locator(".status.succeeded").wait_for(timeout=10_000)
            assert lists[path].locator("[hx-trigger]").count() == 0, f"{path} still polls"

        listing = lists["/operations/"]
        listing.select_option("#id_kind", "benchmarks.run")
        listing.click("#operation-filters button")
        listing.wait_for_url("**kind=benchmarks.run**")
        assert listing.locator("#operations tbody tr").count() == 1
        assert listing.locator("#id_kind").input_value() == "benchmarks.run"
        listing.screenshot(path=str(ARTIFACTS / "operations-filtered.png"), full_page=True)
        browser.close()

    # The ORM after Playwright: its sync API runs an event loop Django refuses to query in.
    logged = operation.log_lines.order_by("id")
    assert final["ids"] == [f"log-{line.pk}" for line in logged], "a line went missing"
    assert last_line.endswith(logged.last().text)
    assert "tps" in logged.last().text  # the benchmark's last step's own line


# No sysctls: they are the machine's own, not the test host's (see kernel_restored).
FOLLOWED_PROFILE = {
    "zfs": {"data": {"atime": "off", "recordsize": "16K"}, "wal": {"atime": "off"}},
    "postgres": {"work_mem": "8MB", "random_page_cost": "1.1", "wal_compression": "on",
                 "checkpoint_completion_target": "0.9", "shared_buffers": "96MB"},
}


def test_follow_a_tuning_apply_log_to_its_end(live_server, worker, operator, fleet_hosts):
    """The apply writes ZFS properties and ALTER SYSTEM settings and restarts
    PostgreSQL; its log, followed to the end, shows the SQL it ran."""
    host = register(fleet_hosts[1], name="applied")
    discovery = wait_until_ended(host.operations.get(), worker, 60)
    assert discovery.status == "succeeded", discovery.error
    host.refresh_from_db()  # the worker recorded its facts
    profile = tuning.create_profile(name="followed apply", settings=FOLLOWED_PROFILE)
    tuning.assign(host, profile)
    plan = tuning.make_plan(host)
    operation = tuning.apply_plan(plan, allow_restart=True)
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        with sync_playwright() as playwright:
            browser, page = signed_in(playwright, live_server.url, operator)
            page.set_viewport_size({"width": 1000, "height": 420})
            final, last_line = follow_to_the_end(page, live_server.url, operation, worker,
                                                 "operation-follow-apply")
            browser.close()
        logged = operation.log_lines.order_by("id")
        assert final["ids"] == [f"log-{line.pk}" for line in logged], "a line went missing"
        assert last_line.endswith(logged.last().text)
        assert any("alter system set \"work_mem\" = '8MB'" in line.text for line in logged)
    finally:  # the fleet's hosts are shared by the session: put back what the plan wrote
        plan.refresh_from_db()
        if plan.can_roll_back:
            _, undo = tuning.rollback(plan, allow_restart=True)
            assert wait_until_ended(undo, worker, 90).status == "succeeded", undo.error
