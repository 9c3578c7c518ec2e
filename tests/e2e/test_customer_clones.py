"""A customer's clones, end to end: a tenant's member in headless Chromium, a real Celery
worker and a real test host. The member makes a clone from a snapshot on its cluster's
page, reads the password and connection string shown once, connects with psql and
writes (the source is unchanged), resets it (the write is gone), is refused destroying
it while protected, makes a short-lived one, is refused a third by the tenant's quota;
the clones tick (sent to the worker, as beat does) destroys the expired one and reads
the space of the other with one command; the tenant admin's audit log shows who did
what and how the operations ended."""

from __future__ import annotations

import os
import subprocess
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.clones import services as clone_services
from apps.clones.models import Clone
from apps.clones.tasks import expire
from apps.ops.models import Operation
from apps.snapshots import services as snapshot_services
from apps.tenants import services as tenant_services
from apps.tenants.models import Membership
from tests.browser import DESKTOP, launch, session, sign_in
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_clones import TABLE, host  # noqa: F401  the fixture
from tests.tenants import factories as tenants
from tests.waiting import wait_until
from tests.workers import Worker

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

WAIT_MS = 60_000


def psql(connection: str, password: str, sql: str) -> str:
    done = subprocess.run(["psql", connection, "-XAtc", sql], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "PGPASSWORD": password})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def make_clone(page, url: str, assignment, snapshot: str, name: str, **fields) -> None:
    page.goto(f"{url}/clones/clusters/{assignment.pk}/")
    page.select_option("#id_snapshot", snapshot)
    page.fill("#id_name", name)
    for field, value in fields.items():
        page.fill(f"#id_{field}", str(value))
    page.click("#clone-form button")


def ready(page, kind: str) -> None:
    """The clone's page, live: its operation ends and the clone is ready."""
    page.wait_for_selector(f"#clone-live:has-text('{kind}') #op-status:has-text('succeeded')",
                           timeout=WAIT_MS)
    page.wait_for_selector("#clone-live .badge:has-text('ready')", timeout=WAIT_MS)


def test_a_member_clones_resets_is_refused_and_a_ttl_expires(live_server, host,  # noqa: F811
                                                              tmp_path):
    fleet_host, row = host
    url = live_server.url
    cluster = row.clusters.get()
    clone_services.update_settings(row, port_min=6630, port_max=6639, listen_address=None,
                                   allowed_networks=["127.0.0.0/8"])
    taken = drive(snapshot_services.snapshot_now(row, cluster=cluster))
    assert taken.status == Operation.Status.SUCCEEDED, taken.error
    snapshot = taken.state["snapshot"]
    acme = tenants.tenant("Acme")
    assignment = tenant_services.assign_cluster(acme, row, cluster.data_dir)
    tenant_services.set_quotas(acme, max_clones=2, max_clone_ttl_minutes=120)
    ana = tenants.member(acme, "ana")
    boss = tenants.member(acme, "boss", Membership.Role.TENANT_ADMIN)
    worker = Worker("pozol", "customer", tmp_path)
    try:
        with session() as playwright:
            browser = launch(playwright)
            context = browser.new_context(viewport=DESKTOP)  # no axe here: a flow test
            sign_in(context, url, ana)
            page = context.new_page()
            page.on("dialog", lambda dialog: dialog.accept())

            page.goto(f"{url}/clones/")
            page.click(f"#clusters a:has-text('{cluster.data_dir}')")
            assert snapshot in page.inner_text("#snapshots")
            make_clone(page, url, assignment, snapshot, "web1", ttl_minutes=90,
                       protected_minutes=60)
            password = page.input_value("#password")
            connection = page.inner_text("#connection-string")
            page.click("#follow-clone")
            ready(page, "clones.create")

            # Its own copy: the write stays in the clone.
            assert psql(connection, password, f"SELECT count(*) FROM {TABLE}") == "321"
            psql(connection, password, f"INSERT INTO {TABLE} VALUES (0)")
            assert psql(connection, password, f"SELECT count(*) FROM {TABLE}") == "322"
            assert run_on(fleet_host, (
                f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/psql "
                f"-XAt -h {fleet_host.pg_socket_dir} -p {fleet_host.pg_port} -d postgres "
                f"-c 'SELECT count(*) FROM {TABLE}'")).strip() == "321"

            page.click("#reset-form button")
            ready(page, "clones.reset")
            # Same name, port and password; fresh data.
            assert psql(connection, password, f"SELECT count(*) FROM {TABLE}") == "321"

            page.click("#destroy-form button")
            assert "is protected until" in page.inner_text(".flash.error")
            web1 = Clone.objects.get(name="web1")
            assert web1.state == Clone.State.READY

            make_clone(page, url, assignment, snapshot, "short", ttl_minutes=1)
            page.click("#follow-clone")
            ready(page, "clones.create")
            make_clone(page, url, assignment, snapshot, "third")
            refusal = page.inner_text("#clone-form")
            assert "Acme has 2 clones and its clone quota is 2" in refusal

            # The clock moves on past the short TTL; the tick goes to the worker, as beat
            # sends it.
            Clone.objects.filter(name="short").update(
                expires_at=timezone.now() - timedelta(seconds=1))
            expire.delay()
            assert wait_until(lambda: Clone.objects.get(name="short").state
                              == Clone.State.DESTROYED, 60, 0.3), worker.output()[-3000:]
            assert "pozol_clones/short" not in run_on(fleet_host, "zfs list -H -o name")
            assert wait_until(lambda: Clone.objects.get(name="web1").used_at, 30, 0.3)
            web1.refresh_from_db()
            root = web1.decoded_layout().root
            listed = run_on(fleet_host, f"zfs get -Hp -o value used {root}").strip()
            print(f"\nweb1 uses {web1.used} bytes (zfs now says {listed})")
            assert web1.used and web1.used > 0
            page.goto(f"{url}/clones/")
            assert "web1" in page.inner_text("#clones")

            # The tenant admin reads who did what, and how the operations ended.
            sign_in(context, url, boss)
            page.goto(f"{url}/audit/")
            log = page.inner_text("#audit-events")
            browser.close()
    finally:
        worker.stop()
    events = AuditEvent.objects.filter(username="ana", path__startswith="/clones/")
    outcomes = sorted((e.action, e.outcome) for e in events)
    assert outcomes == [("clones:cluster", "refused"), ("clones:cluster", "success"),
                        ("clones:cluster", "success"), ("clones:destroy", "refused"),
                        ("clones:reset", "success")], outcomes
    assert "clones.create" in log and "clones.reset" in log and "succeeded" in log
    assert "ana" in log and "clone quota is 2" in log and "is protected until" in log
