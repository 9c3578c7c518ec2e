"""Clones of a tenant, without a host: a member makes, lists, resets and destroys its
tenant's clones through the API and its pages, another tenant's are not found; the
operator's quotas refuse a request past them naming the quota and the figures; the
audit log names who did it, and how the operation it started ended."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.clones.models import Clone
from apps.ops.models import Operation
from apps.tenants import services as tenant_services
from apps.tenants.models import Membership
from tests.clones import factories
from tests.tenants import factories as tenants

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def world():
    """Tenant Acme owns the cluster of db1; Zorgco owns the cluster of db2."""
    acme, zorg = tenants.tenant("Acme"), tenants.tenant("Zorgco")
    hosts = {}
    for name, tenant in (("db1", acme), ("db2", zorg)):
        host = factories.host(name)
        factories.cluster(host)
        factories.snapshots(host)
        tenant_services.assign_cluster(tenant, host, "/tank/pg/data/pgdata")
        hosts[name] = host
    ana = tenants.member(acme, "ana")
    olaf = tenants.member(zorg, "olaf")
    return {"acme": acme, "zorg": zorg, "db1": hosts["db1"], "db2": hosts["db2"],
            "ana": ana, "olaf": olaf, "ana_api": tenants.api_as(ana),
            "olaf_api": tenants.api_as(olaf)}


def ask(api, host, **changes):
    return api.post("/api/clones/", {"cluster": host.clusters.get().pk,
                                     "snapshot": factories.SNAPSHOT, "name": "dev1",
                                     **changes}, format="json")


def test_a_member_makes_its_tenants_clone_and_another_tenant_finds_nothing(world):
    made = ask(world["ana_api"], world["db1"], ttl_minutes=60)
    assert made.status_code == 202, made.content
    clone = Clone.objects.get()
    assert (clone.tenant, clone.created_by, clone.host) == (world["acme"], world["ana"],
                                                            world["db1"])
    assert made.json()["clone"]["tenant"] == world["acme"].pk
    olaf = world["olaf_api"]
    assert olaf.get("/api/clones/").json()["results"] == []
    for path in (f"/api/clones/{clone.pk}/", ):
        assert olaf.get(path).status_code == 404
    assert olaf.delete(f"/api/clones/{clone.pk}/").status_code == 404
    assert olaf.post(f"/api/clones/{clone.pk}/reset/").status_code == 404
    # Acme's cluster does not exist for Zorgco: refused before anything is made.
    theirs = ask(olaf, world["db1"], name="mine")
    assert theirs.status_code == 400
    assert "does not exist" in str(theirs.json()["error"]["fields"]["cluster"])
    assert Clone.objects.count() == 1 and Operation.objects.count() == 1
    assert [c["name"] for c in world["ana_api"].get("/api/clones/").json()["results"]] == [
        "dev1"]


def test_a_member_resets_and_destroys_its_clone_and_protection_refuses(world):
    clone = factories.clone(world["db1"], tenant=world["acme"], layout={})
    api = world["ana_api"]
    reset = api.post(f"/api/clones/{clone.pk}/reset/", {"snapshot": factories.SNAPSHOT},
                     format="json")
    assert reset.status_code == 202, reset.content
    assert reset.json()["kind"] == "clones.reset"
    clone.refresh_from_db()
    assert clone.state == Clone.State.RESETTING
    shown = api.get(f"/api/clones/{clone.pk}/").json()
    assert shown["operation"]["kind"] == "clones.reset"
    assert shown["operation"]["status"] == "pending"
    kept = factories.clone(world["db1"], name="kept", port=6501, tenant=world["acme"],
                           protected_until=timezone.now() + timedelta(hours=1))
    refused = api.delete(f"/api/clones/{kept.pk}/")
    assert refused.status_code == 409 and "protected" in refused.json()["error"]["message"]


def test_quotas_are_the_operators_and_refuse_with_the_figures(world, api):
    acme = world["acme"]
    member = world["ana_api"]
    assert member.patch(f"/api/tenants/{acme.pk}/", {"max_clones": 99},
                        format="json").status_code == 403
    set_ = api.patch(f"/api/tenants/{acme.pk}/", {"max_clones": 1, "max_clone_ttl_minutes": 60,
                                                  "max_clone_space": 100 * 2**20},
                     format="json")
    assert set_.status_code == 200, set_.content
    assert set_.json()["max_clones"] == 1
    assert api.patch(f"/api/tenants/{acme.pk}/", {"max_clones": -1},
                     format="json").status_code == 400
    long = ask(member, world["db1"], ttl_minutes=120)
    assert long.status_code == 409
    assert long.json()["error"]["message"] == (
        "ttl: 120 minutes is past Acme's longest clone TTL quota of 60 minutes")
    assert ask(member, world["db1"], protected_minutes=61).status_code == 409
    first = ask(member, world["db1"])  # no TTL asked: the longest allowed
    assert first.status_code == 202
    clone = Clone.objects.get()
    assert clone.quota == 100 * 2**20  # the tenant's clone space, less than the host's
    assert timedelta(minutes=59) < clone.expires_at - clone.created_at <= timedelta(minutes=60)
    second = ask(member, world["db1"], name="dev2")
    assert second.status_code == 409
    error = second.json()["error"]
    assert error["code"] == "over_quota"
    assert error["message"].startswith("quota: Acme has 1 clones and its clone quota is 1")
    acme.refresh_from_db()
    tenant_services.set_quotas(acme, max_clones=5)
    Clone.objects.filter(pk=clone.pk).update(used=120 * 2**20)
    spacious = ask(member, world["db1"], name="dev3")
    assert spacious.status_code == 409
    assert (f"use {120 * 2**20} bytes and its clone space quota is {100 * 2**20} bytes"
            in spacious.json()["error"]["message"])
    shown = member.get("/api/clones/usage/").json()
    assert [(u["name"], u["clones"], u["space"], u["max_clone_space"]) for u in shown] == [
        ("Acme", 1, 120 * 2**20, 100 * 2**20)]
    # Zorgco has no quota: its member is not refused.
    assert ask(world["olaf_api"], world["db2"], ttl_minutes=600).status_code == 202


def test_a_clone_asked_without_a_ttl_gets_the_longest_ttl_the_page_promises(world):
    """Without a TTL quota the tenant's pages say "longest TTL 30 days": a clone asked for
    without a TTL gets those 30 days, not a life without end."""
    browser = Client()
    browser.force_login(world["ana"])
    page = browser.get("/clones/").content.decode()
    assert "longest TTL 30 days" in page
    assert ask(world["ana_api"], world["db1"]).status_code == 202
    clone = Clone.objects.get()
    assert clone.expires_at is not None
    assert timedelta(days=30) - timedelta(minutes=1) < clone.expires_at - clone.created_at \
        <= timedelta(days=30)


def test_a_member_sees_its_clusters_and_their_snapshots_and_not_another_tenants(world):
    api = world["ana_api"]
    rows = api.get("/api/cluster-assignments/").json()["results"]
    assert [(r["cluster_data_dir"], r["cluster"]) for r in rows] == [
        ("/tank/pg/data/pgdata", world["db1"].clusters.get().pk)]
    snaps = api.get(f"/api/cluster-assignments/{rows[0]['id']}/snapshots/").json()
    assert [s["name"] for s in snaps] == [factories.SNAPSHOT]
    theirs = world["zorg"].clusters.get()
    assert api.get(f"/api/cluster-assignments/{theirs.pk}/").status_code == 404
    assert api.get(f"/api/cluster-assignments/{theirs.pk}/snapshots/").status_code == 404


def test_the_customer_pages_make_reset_and_destroy_a_clone(world, client):
    client.force_login(world["ana"])
    assignment = world["acme"].clusters.get()
    page = client.get(f"/clones/clusters/{assignment.pk}/")
    assert page.status_code == 200 and factories.SNAPSHOT in page.content.decode()
    made = client.post(f"/clones/clusters/{assignment.pk}/", {
        "snapshot": factories.SNAPSHOT, "name": "web1", "ttl_minutes": 30, "role": "dev"})
    clone = Clone.objects.get()
    assert made.status_code == 302 and made["Location"] == f"/clones/{clone.pk}/password/"
    body = client.get(made["Location"]).content.decode()
    assert "Copy the password now" in body
    assert clone.tenant == world["acme"] and "fleet:host" not in body
    olaf = Client()
    olaf.force_login(world["olaf"])
    assert olaf.get(made["Location"]).status_code == 404
    listing = client.get("/clones/").content.decode()
    assert "web1" in listing and "Zorgco" not in listing
    assert client.get(f"/clones/{clone.pk}/").status_code == 200
    theirs = world["zorg"].clusters.get()
    assert client.get(f"/clones/clusters/{theirs.pk}/").status_code == 404
    Clone.objects.filter(pk=clone.pk).update(state=Clone.State.READY)
    Operation.objects.update(status=Operation.Status.SUCCEEDED)  # the creation ended
    assert client.post(f"/clones/{clone.pk}/reset/").status_code == 302
    assert Clone.objects.get().state == Clone.State.RESETTING
    Clone.objects.filter(pk=clone.pk).update(state=Clone.State.READY,
                                             protected_until=timezone.now() + timedelta(hours=1))
    refused = client.post(f"/clones/{clone.pk}/destroy/", follow=True)
    assert "is protected until" in refused.content.decode()
    Clone.objects.filter(pk=clone.pk).update(protected_until=None)
    Operation.objects.update(status=Operation.Status.SUCCEEDED)
    assert client.post(f"/clones/{clone.pk}/destroy/").url == f"/clones/{clone.pk}/"
    assert Clone.objects.get().state == Clone.State.DESTROYING
    client.force_login(world["olaf"])
    assert client.get(f"/clones/{clone.pk}/").status_code == 404
    assert client.post(f"/clones/{clone.pk}/destroy/").status_code == 404


def test_a_quota_refusal_on_the_page_names_the_quota(world, client):
    tenant_services.set_quotas(world["acme"], max_clones=0)
    client.force_login(world["ana"])
    assignment = world["acme"].clusters.get()
    refused = client.post(f"/clones/clusters/{assignment.pk}/", {
        "snapshot": factories.SNAPSHOT, "name": "web1", "role": "dev"})
    assert refused.status_code == 200
    assert "its clone quota is 0" in refused.content.decode()
    assert not Clone.objects.exists()
    event = AuditEvent.objects.get(action="clones:cluster")
    assert event.outcome == "refused" and "clone quota is 0" in event.message


def test_the_operator_sets_quotas_on_the_tenant_page(world, signed_in):
    acme = world["acme"]
    page = signed_in.get(f"/tenants/{acme.pk}/").content.decode()
    assert 'id="quota-form"' in page
    signed_in.post(f"/tenants/{acme.pk}/quotas/", {"max_clones": 3, "max_clone_space_mib": 100,
                                                   "max_clone_ttl_minutes": 120,
                                                   "clone_idle_minutes": 15})
    acme.refresh_from_db()
    assert (acme.max_clones, acme.max_clone_space, acme.max_clone_ttl_minutes,
            acme.clone_idle_minutes) == (3, 100 * 2**20, 120, 15)
    bad = signed_in.post(f"/tenants/{acme.pk}/quotas/", {"max_clones": -2})
    assert bad.status_code == 200 and "errorlist" in bad.content.decode()


def test_the_audit_log_names_who_and_how_the_started_operation_ended(world):
    tenant_services.set_role(world["ana"].membership, Membership.Role.TENANT_ADMIN)
    api = world["ana_api"]
    assert ask(api, world["db1"]).status_code == 202
    event = AuditEvent.objects.get(action="clone-list")
    clone = Clone.objects.get()
    assert (event.username, event.tenant, event.object_type, event.object_id) == (
        "ana", world["acme"], "clone", str(clone.pk))
    assert event.token_hint and event.outcome == "success"
    operation = Operation.objects.get()
    shown = api.get("/api/audit-events/", {"object_type": "clone"}).json()["results"][0]
    assert shown["operation"]["status"] == "pending"
    Operation.objects.filter(pk=operation.pk).update(status=Operation.Status.FAILED,
                                                     error="the clone's server log ends: boom")
    shown = api.get("/api/audit-events/", {"object_type": "clone"}).json()["results"][0]
    assert (shown["operation"]["id"], shown["operation"]["status"]) == (operation.pk, "failed")
    assert "boom" in shown["operation"]["error"]
    page = tenants_page(world["ana"])
    assert f"clones.create #{operation.pk}" in page and "failed" in page
    # Zorgco's member reads none of it.
    assert world["olaf_api"].get("/api/audit-events/").status_code == 403


def tenants_page(user) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.get("/audit/").content.decode()
