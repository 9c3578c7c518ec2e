"""End to end: a real Celery worker, Redis and the PostgreSQL control-plane
database; a host added through the API is discovered, and its page in headless
Chromium shows its datasets with their compression ratios."""

import json
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from apps.accounts.models import ApiToken
from apps.fleet.models import Host
from tests.browser import ARTIFACTS, signed_in
from tests.workers import Worker

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def call(url: str, token: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        method="POST" if body is not None else "GET")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def test_add_a_host_by_api_and_see_it_in_the_browser(live_server, worker, operator,
                                                       fleet_hosts):
    fleet_host = fleet_hosts[1]
    _, token = ApiToken.objects.issue(operator, "e2e")
    created = call(f"{live_server.url}/api/hosts/", token, {
        "name": "e2e-db", "address": fleet_host.address, "port": fleet_host.port,
        "user": fleet_host.user, "work_dir": fleet_host.work_dir,
        "private_key": Path(fleet_host.private_key_path).read_text(),
        "expected_fingerprint": fleet_host.host_key_fingerprint})

    operation_url = f"{live_server.url}/api/operations/{created['operation']['id']}/"
    deadline = time.monotonic() + 90
    while (operation := call(operation_url, token))["status"] not in {"succeeded", "failed"}:
        assert time.monotonic() < deadline, f"discovery did not finish: {operation}"
        time.sleep(0.5)
    assert operation["status"] == "succeeded", (operation, worker.output()[-3000:])

    host = Host.objects.get(name="e2e-db")
    data = host.datasets.get(name=fleet_host.pg_data_dataset)
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser, page = signed_in(playwright, live_server.url, operator)
        page.goto(f"{live_server.url}/hosts/{host.pk}/datasets/")
        row = page.locator("#datasets tr", has_text=fleet_host.pg_data_dataset).first
        row.wait_for()
        assert f"{data.compressratio:.2f}x" in row.inner_text()
        assert data.compression in row.inner_text()
        page.screenshot(path=str(ARTIFACTS / "host-page.png"), full_page=True)

        page.goto(f"{live_server.url}/")
        assert "e2e-db" in page.locator("#hosts").inner_text()
        assert page.locator("#hosts .badge.good", has_text="reachable").count() == 1
        browser.close()


def wait_for(url: str, token: str, worker: Worker) -> dict:
    deadline = time.monotonic() + 120
    while (operation := call(url, token))["status"] not in {"succeeded", "failed"}:
        assert time.monotonic() < deadline, f"operation did not finish: {operation}"
        time.sleep(0.5)
    assert operation["status"] == "succeeded", (operation, worker.output()[-3000:])
    return operation


def test_tune_a_host_through_the_api_and_read_the_plan_in_the_browser(
        live_server, worker, operator, fleet_hosts):
    from tests.integration.conftest import run_on

    fleet_host = fleet_hosts[0]
    data = fleet_host.pg_data_dataset
    atime = run_on(fleet_host, f"zfs get -Hp -o value atime {data}").strip()
    _, token = ApiToken.objects.issue(operator, "e2e")
    api = f"{live_server.url}/api"
    host = call(f"{api}/hosts/", token, {
        "name": "tuned", "address": fleet_host.address, "port": fleet_host.port,
        "user": fleet_host.user, "work_dir": fleet_host.work_dir,
        "private_key": Path(fleet_host.private_key_path).read_text(),
        "expected_fingerprint": fleet_host.host_key_fingerprint})
    wait_for(f"{api}/operations/{host['operation']['id']}/", token, worker)

    profile = call(f"{api}/profiles/", token, {"name": "E2E", "settings": {
        "zfs": {"data": {"atime": "off" if atime == "on" else "on"}},
        "postgres": {"full_page_writes": "off", "wal_buffers": "8MB"}}})
    request = urllib.request.Request(
        f"{api}/hosts/{host['id']}/profile/", method="PUT",
        data=json.dumps({"profile": profile["id"]}).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()
    plan = call(f"{api}/hosts/{host['id']}/plan/", token, {})
    assert plan["needs_restart"] == ["wal_buffers"] and len(plan["changes"]) == 3

    applying = call(f"{api}/plans/{plan['id']}/apply/", token, {"allow_restart": False})
    wait_for(f"{api}/operations/{applying['id']}/", token, worker)
    statuses = {c["key"]: c["status"] for c in call(f"{api}/plans/{plan['id']}/", token)
                ["changes"]}
    assert statuses == {"atime": "applied", "full_page_writes": "applied",
                        "wal_buffers": "awaiting_restart"}

    with sync_playwright() as playwright:
        browser, page = signed_in(playwright, live_server.url, operator)
        page.goto(f"{live_server.url}/tuning/plans/{plan['id']}/")
        changes = page.locator("#changes").inner_text()
        assert "waits for a restart" in changes and "full_page_writes" in changes
        assert page.locator("#rollback").count() == 1
        page.screenshot(path=str(ARTIFACTS / "plan-page.png"), full_page=True)
        browser.close()

    back = call(f"{api}/plans/{plan['id']}/rollback/", token, {})
    wait_for(f"{api}/operations/{back['operation']['id']}/", token, worker)
    assert run_on(fleet_host, f"zfs get -Hp -o value atime {data}").strip() == atime
