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
    ana = factories.api_as(factories.member(acme, "ana"))
    assert [t["name"] for t in ana.get("/api/tenants/").json()["results"]] == ["Acme"]
    assert ana.get(f"/api/tenants/{other.pk}/").status_code == 404
    assert ana.get(f"/api/tenants/{acme.pk}/").status_code == 200
    assert ana.post("/api/tenants/", {"name": "Mine"}).status_code == 403
    assert ana.patch(f"/api/tenants/{acme.pk}/", {"name": "Renamed"}).status_code == 403
    factories.member(other, "olaf")
    names = [m["username"] for m in ana.get("/api/memberships/").json()["results"]]
    assert names == ["ana"]
    # Its tenant's clusters (none yet): readable, not writable.
    assert ana.get("/api/cluster-assignments/").json()["results"] == []
    assert ana.post("/api/cluster-assignments/", {}).status_code == 403


def test_a_tenant_admin_manages_its_own_members_only(operator):
    acme, other = factories.tenant("Acme"), factories.tenant("Other")
    boss = factories.api_as(factories.member(acme, "boss", Membership.Role.TENANT_ADMIN))
    bob = factories.api_as(factories.member(acme, "bob"))
    olaf = factories.member(other, "olaf")
    made = boss.post("/api/memberships/", {"tenant": acme.pk, "username": "eve",
                                           "role": "member"})
    assert made.status_code == 201
    eve = made.json()["id"]
    assert boss.patch(f"/api/memberships/{eve}/", {"role": "tenant_admin"}).status_code == 200
    assert bob.patch(f"/api/memberships/{eve}/", {"role": "member"}).status_code == 404
    assert bob.post("/api/memberships/", {"tenant": acme.pk, "username": "mallory",
                                          "role": "tenant_admin"}).status_code == 403
    elsewhere = boss.post("/api/memberships/", {"tenant": other.pk, "username": "x",
                                                "role": "member"})
    assert elsewhere.status_code == 400 and "tenant" in elsewhere.json()["error"]["fields"]
    assert boss.delete(f"/api/memberships/{olaf.membership.pk}/").status_code == 404
    # A tenant admin makes new accounts; it never pulls in someone else's.
    taken = boss.post("/api/memberships/", {"tenant": acme.pk, "username": operator.username,
                                            "role": "member"})
    assert taken.status_code in (400, 409)
    factories.services.add_member(other, "loner", "member").delete()
    adopted = boss.post("/api/memberships/", {"tenant": acme.pk, "username": "loner",
                                              "role": "member"})
    assert adopted.status_code == 409 and "new user name" in adopted.json()["error"]["message"]
    assert boss.delete(f"/api/memberships/{eve}/").status_code == 204


def test_a_tenant_admin_cannot_tell_operators_or_other_members_from_taken_names(operator):
    """Every taken name gets one answer: who is an operator, or which accounts belong
    to another tenant, is not a tenant admin's to learn."""
    acme, other = factories.tenant("Acme"), factories.tenant("Other")
    boss = factories.api_as(factories.member(acme, "boss", Membership.Role.TENANT_ADMIN))
    factories.member(other, "olaf")
    factories.services.add_member(other, "loner", "member").delete()

    def add(username: str):
        answer = boss.post("/api/memberships/", {"tenant": acme.pk, "username": username,
                                                 "role": "member"})
        return answer.status_code, answer.json()["error"]

    answers = {name: add(name) for name in (operator.username, "olaf", "loner", "boss")}
    assert {code for code, _ in answers.values()} == {409}
    bodies = {name: (e["message"].replace(name, "NAME"), e["fields"])
              for name, (_, e) in answers.items()}
    assert len(set(map(repr, bodies.values()))) == 1, bodies
