import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.tenants.models import ClusterAssignment, Membership
from tests.tenants import factories

pytestmark = pytest.mark.django_db


def test_an_operator_makes_a_tenant_adds_a_member_and_assigns_a_cluster(signed_in,
                                                                       replayed_host):
    made = signed_in.post("/tenants/", {"name": "Acme"})
    tenant = factories.Tenant.objects.get(name="Acme")
    assert made.status_code == 302 and made.url == f"/tenants/{tenant.pk}/"
    assert b"exists already" in signed_in.post("/tenants/", {"name": "acme"}).content
    signed_in.post(f"/tenants/{tenant.pk}/", {"username": "ana", "role": "tenant_admin"})
    membership = Membership.objects.get(user__username="ana")
    assert membership.tenant == tenant and membership.is_admin
    signed_in.post(f"/tenants/members/{membership.pk}/role/", {"role": "member"})
    membership.refresh_from_db()
    assert not membership.is_admin
    cluster = replayed_host.clusters.first()
    page = signed_in.get(f"/tenants/{tenant.pk}/").content.decode()
    assert f'value="{replayed_host.pk}:{cluster.data_dir}"' in page
    signed_in.post(f"/tenants/{tenant.pk}/clusters/",
                   {"cluster": f"{replayed_host.pk}:{cluster.data_dir}"})
    assert ClusterAssignment.objects.get().tenant == tenant
    refused = signed_in.post(f"/tenants/{tenant.pk}/clusters/", {"cluster": "1;rm"},
                             HTTP_REFERER=f"/tenants/{tenant.pk}/")
    assert refused.status_code == 302


def test_a_member_sees_its_tenant_read_only_and_another_tenant_not_at_all(client):
    acme, other = factories.tenant("Acme"), factories.tenant("Other")
    client.force_login(factories.member(acme, "ana"))
    page = client.get(f"/tenants/{acme.pk}/").content.decode()
    assert "Tenant Acme" in page and 'id="member-form"' not in page
    assert client.get(f"/tenants/{other.pk}/").status_code == 404
    refused = client.post(f"/tenants/{acme.pk}/", {"username": "eve", "role": "tenant_admin"})
    assert refused.status_code == 403
    assert not Membership.objects.filter(user__username="eve").exists()
    assert client.get("/").url == "/account/"
    assert client.get("/account/").url == f"/tenants/{acme.pk}/"


def test_the_tenants_list_is_a_fixed_number_of_queries(signed_in):
    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert signed_in.get("/tenants/").status_code == 200
        return len(captured)

    factories.member(factories.tenant("T0"), "u0")
    few = count()
    for i in range(1, 6):
        factories.member(factories.tenant(f"T{i}"), f"u{i}")
    assert count() == few


def test_a_tenant_admin_adds_and_removes_its_members_on_its_page(client):
    acme, other = factories.tenant("Acme"), factories.tenant("Other")
    client.force_login(factories.member(acme, "boss", Membership.Role.TENANT_ADMIN))
    page = client.get(f"/tenants/{acme.pk}/").content.decode()
    assert 'id="member-form"' in page and 'id="cluster-form"' not in page
    client.post(f"/tenants/{acme.pk}/", {"username": "eve", "role": "member"})
    eve = Membership.objects.get(user__username="eve")
    assert eve.tenant == acme
    olaf = factories.member(other, "olaf").membership
    assert client.post(f"/tenants/members/{olaf.pk}/delete/").status_code == 404
    assert client.post(f"/tenants/{acme.pk}/clusters/", {"cluster": "1:/x"}).status_code == 403
    client.post(f"/tenants/members/{eve.pk}/delete/")
    assert not Membership.objects.filter(pk=eve.pk).exists()


def _said(response) -> list[str]:
    """The messages the page a redirect leads to shows."""
    return [str(message) for message in response.context["messages"]]


def test_each_action_says_what_it_did_and_removal_looks_secondary(signed_in, replayed_host):
    made = signed_in.post("/tenants/", {"name": "Acme"}, follow=True)
    assert _said(made) == ["Tenant Acme created."]
    tenant = factories.Tenant.objects.get(name="Acme")
    page = signed_in.get(f"/tenants/{tenant.pk}/").content.decode()
    # Least privilege first: the form offers "member" unless told otherwise.
    assert '<option value="member" selected>' in page
    added = signed_in.post(f"/tenants/{tenant.pk}/", {"username": "ana", "role": "member"},
                           follow=True)
    assert _said(added) == ["ana added to Acme as member."]
    membership = Membership.objects.get(user__username="ana")
    cluster = replayed_host.clusters.first()
    assigned = signed_in.post(f"/tenants/{tenant.pk}/clusters/",
                              {"cluster": f"{replayed_host.pk}:{cluster.data_dir}"}, follow=True)
    assert _said(assigned) == [f"{cluster.data_dir} on {replayed_host.name} assigned to Acme."]
    page = assigned.content.decode()
    assert 'class="small secondary danger" aria-label="Remove ana"' in page
    assert f'class="small secondary danger" aria-label="Unassign {cluster.data_dir}' in page
    unassigned = signed_in.post(
        f"/tenants/clusters/{ClusterAssignment.objects.get().pk}/delete/", follow=True)
    assert _said(unassigned) == [
        f"{cluster.data_dir} on {replayed_host.name} unassigned from Acme."]
    removed = signed_in.post(f"/tenants/members/{membership.pk}/delete/", follow=True)
    assert _said(removed) == ["ana removed from Acme."]
