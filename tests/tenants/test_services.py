import pytest

from apps.common.errors import Conflict, DomainError
from apps.tenants import services
from apps.tenants.models import ClusterAssignment, Membership
from tests.tenants import factories

pytestmark = pytest.mark.django_db


def test_a_tenant_name_is_required_printable_and_unique():
    factories.tenant("Acme")
    with pytest.raises(Conflict, match="exists already"):
        services.create_tenant("acme")
    for bad in ("", "   ", "a\nb", "x" * 101):
        with pytest.raises(DomainError) as caught:
            services.create_tenant(bad)
        assert caught.value.fields and "name" in caught.value.fields


def test_members_are_made_with_a_role_and_belong_to_one_tenant(operator):
    acme, other = factories.tenant("Acme"), factories.tenant("Other")
    membership = services.add_member(acme, "ana", Membership.Role.TENANT_ADMIN)
    assert membership.is_admin and not membership.user.has_usable_password()
    with pytest.raises(Conflict, match="member of a tenant already"):
        services.add_member(other, "ana", Membership.Role.MEMBER)
    with pytest.raises(DomainError, match="operator"):
        services.add_member(acme, operator.username, Membership.Role.MEMBER)
    with pytest.raises(DomainError, match="role"):
        services.add_member(acme, "bob", "owner")
    for hostile in ("bob;rm", "$(id)", "-rf", "a b", "'"):
        with pytest.raises(DomainError, match="username"):
            services.add_member(acme, hostile, Membership.Role.MEMBER)
    with pytest.raises(DomainError, match="password"):
        services.add_member(acme, "carl", Membership.Role.MEMBER, password="short")
    assert list(acme.memberships.values_list("user__username", flat=True)) == ["ana"]


def test_a_tenant_with_members_is_not_deleted(operator):
    acme = factories.tenant("Acme")
    factories.member(acme, "ana")
    with pytest.raises(Conflict, match="remove them first"):
        services.delete_tenant(acme)
    services.remove_member(acme.memberships.get())
    services.delete_tenant(acme)


def test_a_cluster_is_assigned_by_host_and_data_directory_to_one_tenant(replayed_host):
    acme, other = factories.tenant("Acme"), factories.tenant("Other")
    cluster = replayed_host.clusters.first()
    assignment = services.assign_cluster(acme, replayed_host, cluster.data_dir)
    with pytest.raises(Conflict, match="belongs to Acme"):
        services.assign_cluster(other, replayed_host, cluster.data_dir)
    with pytest.raises(DomainError, match="no cluster"):
        services.assign_cluster(other, replayed_host, "/nowhere")
    # Discovery recreates cluster rows: the assignment outlives them.
    replayed_host.clusters.all().delete()
    assert ClusterAssignment.objects.get() == assignment
