"""What operators do with tenants, and what anyone may see of them.

One function per action; each refuses bad input or state with a TenantError
naming the field, before anything is saved.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from apps.accounts.roles import is_operator
from apps.common.errors import Conflict, DomainError
from apps.common.numbers import whole_in
from apps.fleet.models import Host, PgCluster
from apps.tenants.models import ClusterAssignment, Membership, Tenant


class TenantError(DomainError):
    code = "tenant_refused"


def membership_of(user) -> Membership | None:
    """The user's membership (with its tenant), or None for operators and strangers."""
    if user is None or not user.is_authenticated:
        return None
    return Membership.objects.select_related("tenant").filter(user=user).first()


def visible_tenants(user) -> QuerySet[Tenant]:
    """Operators see every tenant; a member only its own."""
    if is_operator(user):
        return Tenant.objects.all()
    return Tenant.objects.filter(memberships__user=user)


def managed_tenants(user) -> QuerySet[Tenant]:
    """The tenants whose members `user` manages: any for operators, its own for a
    tenant admin, none for a member."""
    if is_operator(user):
        return Tenant.objects.all()
    return Tenant.objects.filter(memberships__user=user,
                                 memberships__role=Membership.Role.TENANT_ADMIN)


def managed_users(user) -> QuerySet:
    """The accounts whose tokens `user` manages besides its own: a tenant admin's
    tenant's members (apps.accounts.services.TOKEN_MANAGERS; operators manage all)."""
    return get_user_model().objects.filter(membership__tenant__in=managed_tenants(user))


def visible_assignments(user) -> QuerySet[ClusterAssignment]:
    """The clusters given to `user`'s tenant (every assignment for operators)."""
    rows = ClusterAssignment.objects.select_related("tenant", "host")
    if is_operator(user):
        return rows
    if user is None or not user.is_authenticated:
        return rows.none()
    tenant_id = Membership.objects.filter(user=user).values_list("tenant_id", flat=True).first()
    return rows.filter(tenant_id=tenant_id) if tenant_id else rows.none()


def cluster_of(assignment: ClusterAssignment) -> PgCluster | None:
    """The assigned cluster's row, running or down (an assignment names host and data
    directory); None before discovery finds it or once it is retired."""
    return (PgCluster.objects.select_related("host", "data_dataset", "wal_dataset")
            .filter(host_id=assignment.host_id, data_dir=assignment.cluster_data_dir).first())


def with_clusters(assignments) -> list[ClusterAssignment]:
    """The assignments, each with its cluster row (or None) as `origin`, in one query."""
    assignments = list(assignments)
    rows = PgCluster.objects.filter(host_id__in={a.host_id for a in assignments}).only(
        "host_id", "data_dir", "running", "last_seen_at")
    by_key = {(row.host_id, row.data_dir): row for row in rows}
    for assignment in assignments:
        assignment.origin = by_key.get((assignment.host_id, assignment.cluster_data_dir))
    return assignments


def _clean_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise TenantError("name: give the tenant a name.",
                          fields={"name": ["give the tenant a name"]})
    if len(name) > 100 or not name.isprintable():
        raise TenantError("name: at most 100 printable characters.",
                          fields={"name": ["at most 100 printable characters"]})
    return name


def create_tenant(name: str) -> Tenant:
    name = _clean_name(name)
    if Tenant.objects.filter(name__iexact=name).exists():
        raise Conflict(f"name: a tenant named {name!r} exists already.",
                       fields={"name": ["a tenant with this name exists already"]})
    try:
        return Tenant.objects.create(name=name)
    except IntegrityError:
        raise Conflict(f"name: a tenant named {name!r} exists already.",
                       fields={"name": ["a tenant with this name exists already"]}) from None


def rename_tenant(tenant: Tenant, name: str) -> Tenant:
    name = _clean_name(name)
    if Tenant.objects.filter(name__iexact=name).exclude(pk=tenant.pk).exists():
        raise Conflict(f"name: a tenant named {name!r} exists already.",
                       fields={"name": ["a tenant with this name exists already"]})
    tenant.name = name
    tenant.save(update_fields=["name"])
    return tenant


QUOTA_FIELDS = ("max_clones", "max_clone_space", "max_clone_ttl_minutes", "clone_idle_minutes")
QUOTA_MAX = 100_000
SPACE_MAX = 2**60
TTL_MAX = 30 * 24 * 60  # the longest TTL a clone may have at all (apps.clones.services)
_QUOTA_RANGES = {"max_clones": (0, QUOTA_MAX), "max_clone_space": (0, SPACE_MAX),
                 "max_clone_ttl_minutes": (1, TTL_MAX), "clone_idle_minutes": (1, TTL_MAX)}


def set_quotas(tenant: Tenant, **values) -> Tenant:
    """Set the tenant's clone quotas given (None: no limit). Clones already made stay; the
    next request is checked against the new figures."""
    for field, value in values.items():
        if field not in _QUOTA_RANGES:
            raise TenantError(f"{field}: not a quota.", fields={field: ["not a quota"]})
        low, high = _QUOTA_RANGES[field]
        if value is not None and not whole_in(value, low, high):
            raise TenantError(f"{field}: a whole number from {low} to {high}, or empty for "
                              "no limit.", fields={field: [f"from {low} to {high}, or empty"]})
        setattr(tenant, field, value)
    tenant.save(update_fields=list(values) or None)
    return tenant


def delete_tenant(tenant: Tenant) -> None:
    """Refused while it has members or clusters: each is removed on purpose first."""
    if tenant.memberships.exists() or tenant.clusters.exists():
        raise Conflict(f"{tenant.name} still has members or clusters; remove them first.",
                       code="tenant_in_use")
    tenant.delete()


def _check_role(role: str) -> str:
    if role not in Membership.Role.values:
        raise TenantError(f"role: one of {', '.join(Membership.Role.values)}.",
                          fields={"role": ["not a valid choice"]})
    return role


def add_member(tenant: Tenant, username: str, role: str, password: str = "",
               by=None) -> Membership:
    """Make `username` a member of `tenant`, creating the account if it does not exist.

    A new account without a password cannot sign in until one is set (the admin,
    or `manage.py changepassword`); its tokens still work once issued. Only an
    operator (or no one: a command, a test) brings an existing account in; a
    tenant admin makes new ones, so it never takes over someone else's account.
    """
    _check_role(role)
    users = get_user_model()
    username = (username or "").strip()
    try:
        users.username_validator(username)
        if username.startswith("-"):
            raise ValidationError("leading dash")
    except ValidationError:
        raise TenantError("username: letters, digits and @ . + - _ only, not starting with -.",
                          fields={"username": ["letters, digits and @ . + - _ only, "
                                               "not starting with -"]}) from None
    if not username or len(username) > 150:
        raise TenantError("username: 1 to 150 characters.",
                          fields={"username": ["1 to 150 characters"]})
    with transaction.atomic():
        user = users.objects.select_for_update().filter(username=username).first()
        if user is not None and by is not None and not is_operator(by):
            # One answer for every taken name: whether it is an operator's or another
            # tenant's member is not a tenant admin's to learn.
            raise Conflict(f"{username} is taken; choose a new user name (only an operator "
                           "adds an existing account).", fields={"username": ["taken"]})
        if user is not None and is_operator(user):
            raise TenantError(f"{username} is an operator; operators belong to no tenant.",
                              fields={"username": ["an operator; operators belong to no tenant"]})
        if user is not None and Membership.objects.filter(user=user).exists():
            raise Conflict(f"{username} is a member of a tenant already.",
                           fields={"username": ["a member of a tenant already"]})
        if user is None:
            user = users(username=username)
            _set_password(user, password)
            user.save()
        elif password:
            raise TenantError("password: only for a new account; this one exists.",
                              fields={"password": ["only for a new account; this one exists"]})
        return Membership.objects.create(user=user, tenant=tenant, role=role)


def _set_password(user, password: str) -> None:
    if not password:
        user.set_unusable_password()
        return
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise TenantError(f"password: {' '.join(exc.messages)}",
                          fields={"password": exc.messages}) from None
    user.set_password(password)


def set_role(membership: Membership, role: str) -> Membership:
    membership.role = _check_role(role)
    membership.save(update_fields=["role"])
    return membership


def remove_member(membership: Membership) -> None:
    """The account stays (its audit trail names it); it just loses the tenant."""
    membership.delete()


def assign_cluster(tenant: Tenant, host: Host, cluster_data_dir: str) -> ClusterAssignment:
    """Give a cluster discovery found to a tenant; a cluster has one tenant at most."""
    if not PgCluster.objects.filter(host=host, data_dir=cluster_data_dir).exists():
        raise TenantError(f"cluster: {host.name} has no cluster at that data directory "
                          "(as of its last discovery).",
                          fields={"cluster": ["no such cluster on this host"]})
    taken = ClusterAssignment.objects.select_related("tenant").filter(
        host=host, cluster_data_dir=cluster_data_dir).first()
    if taken is not None:
        raise Conflict(f"cluster: it belongs to {taken.tenant.name} already; unassign it "
                       "there first.", fields={"cluster": ["assigned to a tenant already"]})
    try:
        with transaction.atomic():
            return ClusterAssignment.objects.create(tenant=tenant, host=host,
                                                    cluster_data_dir=cluster_data_dir)
    except IntegrityError:
        raise Conflict("cluster: it was just assigned to another tenant.",
                       fields={"cluster": ["assigned to a tenant already"]}) from None


def unassign_cluster(assignment: ClusterAssignment) -> None:
    assignment.delete()
