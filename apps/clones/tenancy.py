"""Clones and tenants: whose clone is whose, what each user may see, and the quotas.

A clone belongs to the tenant its origin cluster was assigned to when it was
made (apps.tenants ClusterAssignment, by host and data directory); an operator's
clone of an unassigned cluster belongs to none. Operators see every clone and
cluster; a member or tenant admin only its tenant's, and anything else is "not
found". Quotas are the tenant's (set by an operator): clones at once, the space
they use together (ZFS `used`, as the clones tick last read it), and the longest
TTL, which is also the TTL of a clone asked for without one (30 days, the most any
clone may have, when the tenant has no TTL quota). They count every clone of the
tenant, whoever made it.
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q, QuerySet, Sum

from apps.accounts.roles import is_operator
from apps.clones import queries
from apps.clones.models import Clone
from apps.common.errors import DomainError
from apps.fleet.models import Host, PgCluster
from apps.tenants import services as tenant_services
from apps.tenants.models import ClusterAssignment, Membership, Tenant


class OverQuota(DomainError):
    """A clone request past one of its tenant's quotas; the message names it and the
    figures."""

    code = "over_quota"
    status = 409


def tenant_of_cluster(host: Host, data_dir: str) -> Tenant | None:
    assignment = ClusterAssignment.objects.select_related("tenant").filter(
        host=host, cluster_data_dir=data_dir).first()
    return assignment.tenant if assignment else None


def may_use_clones(user) -> bool:
    """Operators, and the members and admins of a tenant."""
    return is_operator(user) or bool(
        user is not None and user.is_authenticated
        and Membership.objects.filter(user=user).exists())


def _tenant_id(user) -> int | None:
    return Membership.objects.filter(user=user).values_list("tenant_id", flat=True).first()


def visible_clones(user) -> QuerySet:
    """The clones `user` may see and act on (with host, author and size joined)."""
    clones = queries.for_table()
    if is_operator(user):
        return clones
    tenant_id = _tenant_id(user) if user is not None and user.is_authenticated else None
    return clones.filter(tenant_id=tenant_id) if tenant_id else clones.none()


visible_assignments = tenant_services.visible_assignments
cluster_of = tenant_services.cluster_of


def visible_clusters(user) -> QuerySet[PgCluster]:
    """The PostgreSQL clusters `user` may clone: every one for operators, its tenant's for
    a member (matched by host and data directory, as assignments name them)."""
    clusters = PgCluster.objects.select_related("host", "data_dataset", "wal_dataset")
    if is_operator(user):
        return clusters
    pairs = list(visible_assignments(user).values_list("host_id", "cluster_data_dir"))
    if not pairs:
        return clusters.none()
    match = Q()
    for host_id, data_dir in pairs:
        match |= Q(host_id=host_id, data_dir=data_dir)
    return clusters.filter(match)


def usage(tenant: Tenant) -> dict:
    """The tenant's clones not destroyed, and the bytes they use (as last read)."""
    live = queries.for_table().filter(tenant=tenant).exclude(state=Clone.State.DESTROYED)
    totals = live.aggregate(total=Sum("space"))
    return {"clones": live.count(), "space": totals["total"] or 0}


def usage_row(tenant: Tenant) -> dict:
    """The tenant's usage beside its quotas, as /api/clones/usage/ shows it."""
    return {"tenant": tenant.pk, "name": tenant.name, **usage(tenant),
            **{field: getattr(tenant, field) for field in tenant_services.QUOTA_FIELDS}}


def check_quota(tenant: Tenant, ttl: timedelta | None,
                protected_for: timedelta | None) -> timedelta | None:
    """Refuse a new clone past `tenant`'s quotas (the caller holds the tenant's row
    locked, so two requests cannot both take the last place); returns the TTL to use:
    the longest allowed when none was asked for."""
    longest = (timedelta(minutes=tenant.max_clone_ttl_minutes)
               if tenant.max_clone_ttl_minutes else None)
    if longest is not None:
        if ttl is None:
            ttl = longest
        for field, asked in (("ttl", ttl), ("protected_for", protected_for)):
            if asked is not None and asked > longest:
                raise OverQuota(
                    f"{field}: {_minutes(asked)} minutes is past {tenant.name}'s longest "
                    f"clone TTL quota of {tenant.max_clone_ttl_minutes} minutes",
                    fields={field: [f"at most {tenant.max_clone_ttl_minutes} minutes "
                                    "(the tenant's quota)"]})
    used = usage(tenant)
    if tenant.max_clones is not None and used["clones"] >= tenant.max_clones:
        raise OverQuota(f"quota: {tenant.name} has {used['clones']} clones and its clone "
                        f"quota is {tenant.max_clones}; destroy one first",
                        fields={"quota": [f"clones: {used['clones']} of {tenant.max_clones}"]})
    if tenant.max_clone_space is not None and used["space"] >= tenant.max_clone_space:
        raise OverQuota(f"quota: {tenant.name}'s clones use {used['space']} bytes and its "
                        f"clone space quota is {tenant.max_clone_space} bytes; destroy or "
                        "reset one first",
                        fields={"quota": [f"space: {used['space']} of "
                                          f"{tenant.max_clone_space} bytes"]})
    return ttl


def _minutes(span: timedelta) -> int:
    return int(span.total_seconds() // 60)


def snapshots_of(cluster: PgCluster | None) -> QuerySet:
    """The snapshots of the cluster's data dataset a clone can be made from, newest first."""
    from apps.snapshots.models import Snapshot

    if cluster is None or cluster.data_dataset is None:
        return Snapshot.objects.none()
    return Snapshot.objects.filter(host_id=cluster.host_id,
                                   dataset=cluster.data_dataset.name).order_by("-created_at")
