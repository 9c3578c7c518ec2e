from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.api.fields import (
    ModelSerializer,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.fleet.models import Host, PgCluster
from apps.tenants import services
from apps.tenants.models import ClusterAssignment, Membership, Tenant
from apps.tenants.services import QUOTA_FIELDS, QUOTA_MAX, SPACE_MAX, TTL_MAX


class TenantSerializer(ModelSerializer):
    """A tenant and its clone quotas (operators set them; null: no limit). What its clones
    take now: /api/clones/usage/."""

    max_clones = StrictIntegerField(required=False, allow_null=True, min_value=0,
                                    max_value=QUOTA_MAX, help_text=Tenant._meta.get_field(
                                        "max_clones").help_text)
    max_clone_space = StrictIntegerField(required=False, allow_null=True, min_value=0,
                                         max_value=SPACE_MAX, help_text="Bytes: " + str(
                                             Tenant._meta.get_field("max_clone_space")
                                             .help_text))
    max_clone_ttl_minutes = StrictIntegerField(
        required=False, allow_null=True, min_value=1, max_value=TTL_MAX,
        help_text=Tenant._meta.get_field("max_clone_ttl_minutes").help_text)
    clone_idle_minutes = StrictIntegerField(
        required=False, allow_null=True, min_value=1, max_value=TTL_MAX,
        help_text=Tenant._meta.get_field("clone_idle_minutes").help_text)

    class Meta:
        model = Tenant
        fields = ["id", "name", "created_at", *QUOTA_FIELDS]
        read_only_fields = ["id", "created_at"]
        # A taken name is a conflict (409) the service reports, whatever its case.
        extra_kwargs = {"name": {"validators": []}}



class MembershipSerializer(ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "tenant", "username", "role", "added_at"]
        read_only_fields = ["id", "tenant", "username", "added_at"]


class MembershipCreateSerializer(serializers.Serializer):
    tenant = StrictPrimaryKeyRelatedField(queryset=Tenant.objects.all())
    username = StrictCharField(max_length=150, help_text="An account; made if it does not exist.")
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    password = StrictCharField(required=False, default="", allow_blank=True, max_length=128,
                               write_only=True, help_text="For a new account only; without "
                               "one it cannot sign in until a password is set.")


class ClusterAssignmentSerializer(ModelSerializer):
    tenant = StrictPrimaryKeyRelatedField(queryset=Tenant.objects.all())
    host = StrictPrimaryKeyRelatedField(queryset=Host.objects.all())
    cluster_data_dir = StrictCharField(max_length=1024,
                                       help_text="The cluster's data directory on the host.")

    cluster = serializers.SerializerMethodField(help_text=(
        "The cluster's id (what a clone is asked for with); it holds while the cluster "
        "exists, running or down; null: discovery has not found it (yet), or it was retired."))
    cluster_state = serializers.SerializerMethodField(help_text=(
        "running; down (its PostgreSQL was not running at the last discovery: no clone "
        "can be made from it); unknown (no cluster row: not discovered or retired)."))
    cluster_last_seen_at = serializers.SerializerMethodField(help_text=(
        "When a discovery last found it running."))

    class Meta:
        model = ClusterAssignment
        fields = ["id", "tenant", "host", "cluster_data_dir", "cluster", "cluster_state",
                  "cluster_last_seen_at", "assigned_at"]
        read_only_fields = ["id", "assigned_at"]
        validators = []  # the service says which tenant holds a taken cluster

    def _cluster(self, assignment: ClusterAssignment) -> PgCluster | None:
        found = self.context.setdefault("_clusters", {})
        if assignment.pk not in found:
            found[assignment.pk] = services.cluster_of(assignment)
        return found[assignment.pk]

    def get_cluster(self, assignment: ClusterAssignment) -> int | None:
        cluster = self._cluster(assignment)
        return cluster.pk if cluster else None

    @extend_schema_field(serializers.ChoiceField(choices=["running", "down", "unknown"]))
    def get_cluster_state(self, assignment: ClusterAssignment) -> str:
        cluster = self._cluster(assignment)
        return "unknown" if cluster is None else "running" if cluster.running else "down"

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_cluster_last_seen_at(self, assignment: ClusterAssignment) -> str | None:
        cluster = self._cluster(assignment)
        seen = cluster.last_seen_at if cluster else None
        return serializers.DateTimeField().to_representation(seen) if seen else None

