import pytest

from apps.tenants.models import ClusterAssignment, Membership
from tests.tenants import factories

pytestmark = pytest.mark.django_db


def test_an_operator_makes_a_tenant_adds_members_and_assigns_a_cluster(api, replayed_host):
    tenant = api.post("/api/tenants/", {"name": "Acme"}).json()
    assert tenant["name"] == "Acme"
    created = api.post("/api/memberships/", {"tenant": tenant["id"], "username": "ana",
                                             "role": "tenant_admin"})
    assert created.status_code == 201 and created.json()["role"] == "tenant_admin"
    changed = api.patch(f"/api/memberships/{created.json()['id']}/", {"role": "member"})
    assert changed.json()["role"] == "member"
    cluster = replayed_host.clusters.first()
    assigned = api.post("/api/cluster-assignments/", {
        "tenant": tenant["id"], "host": replayed_host.pk, "cluster_data_dir": cluster.data_dir})
    assert assigned.status_code == 201
    again = api.post("/api/cluster-assignments/", {
        "tenant": tenant["id"], "host": replayed_host.pk, "cluster_data_dir": cluster.data_dir})
    assert again.status_code == 409 and "belongs to Acme" in again.json()["error"]["message"]
    refused = api.delete(f"/api/tenants/{tenant['id']}/")
    assert refused.status_code == 409
    assert ClusterAssignment.objects.count() == 1


def test_a_member_reads_only_its_own_tenant_and_changes_nothing(api):
    acme, other = factories.tenant("Acme"), factories.tenant("Other")
    ana = factories.api_as(factories.member(acme, "ana", Membership.Role.TENANT_ADMIN))
    assert [t["name"] for t in ana.get("/api/tenants/").json()["results"]] == ["Acme"]
    assert ana.get(f"/api/tenants/{other.pk}/").status_code == 404
    assert ana.get(f"/api/tenants/{acme.pk}/").status_code == 200
    assert ana.post("/api/tenants/", {"name": "Mine"}).status_code == 403
    assert ana.patch(f"/api/tenants/{acme.pk}/", {"name": "Renamed"}).status_code == 403
    assert ana.post("/api/memberships/", {"tenant": acme.pk, "username": "eve",
                                          "role": "tenant_admin"}).status_code == 403
    factories.member(other, "olaf")
    names = [m["username"] for m in ana.get("/api/memberships/").json()["results"]]
    assert names == ["ana"]
    assert ana.get("/api/cluster-assignments/").status_code == 403
