"""Tenants (the operator's customers), their members' roles, and their clusters.

Operators are not members: they are staff accounts and see the whole fleet
(apps.accounts.roles). A user belongs to at most one tenant.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Tenant(models.Model):
    """A customer. Its clone quotas are set by an operator; empty: no limit."""

    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    max_clones = models.PositiveIntegerField(
        null=True, blank=True, help_text="Clones the tenant may have at once (not destroyed).")
    max_clone_space = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bytes all its clones may use together (ZFS used); a "
                                         "new clone is refused once they use this much.")
    max_clone_ttl_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="The longest TTL (and protection) a clone may ask "
                                         "for; a clone asked for without a TTL gets this one.")
    clone_idle_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="Clones with no client connected for this long are "
                                         "destroyed (unless protected); empty: never.")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        TENANT_ADMIN = "tenant_admin", "tenant admin"
        MEMBER = "member", "member"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="membership")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant__name", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} ({self.get_role_display()} of {self.tenant})"

    @property
    def is_admin(self) -> bool:
        return self.role == self.Role.TENANT_ADMIN


class ClusterAssignment(models.Model):
    """A PostgreSQL cluster given to a tenant, one tenant per cluster.

    Named by host and data directory, the cluster's natural identity (as
    PolicyAssignment): the same cluster row, whose id holds while discovery finds
    it (and while it is down), or none once the operator retires it.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="clusters")
    host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE,
                             related_name="tenant_assignments")
    cluster_data_dir = models.CharField(max_length=1024)
    assigned_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant__name", "host__name", "cluster_data_dir"]
        constraints = [models.UniqueConstraint(fields=["host", "cluster_data_dir"],
                                               name="one_tenant_per_cluster")]

    def __str__(self) -> str:
        return f"{self.host}:{self.cluster_data_dir} ({self.tenant})"
