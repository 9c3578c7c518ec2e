from rest_framework import serializers

from apps.accounts.api_fields import (
    ModelSerializer,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.accounts.models import ApiToken
from apps.fleet.models import Host
from apps.tenants.models import ClusterAssignment, Membership, Tenant
from apps.tenants.services import QUOTA_FIELDS, QUOTA_MAX, SPACE_MAX, TTL_MAX


class TenantSerializer(ModelSerializer):
    """A tenant, its clone quotas (operators set them; null: no limit) and what its clones
    take now."""

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
    clones = serializers.SerializerMethodField(help_text="Its clones not destroyed.")
    clone_space_used = serializers.SerializerMethodField(
        help_text="Bytes its clones use together (ZFS used, as last read).")

    class Meta:
        model = Tenant
        fields = ["id", "name", "created_at", *QUOTA_FIELDS, "clones", "clone_space_used"]
        read_only_fields = ["id", "created_at"]
        # A taken name is a conflict (409) the service reports, whatever its case.
        extra_kwargs = {"name": {"validators": []}}


    def get_clones(self, tenant: Tenant) -> int:
        return self._usage(tenant)["clones"]

    def get_clone_space_used(self, tenant: Tenant) -> int:
        return self._usage(tenant)["space"]

    def _usage(self, tenant: Tenant) -> dict:
        from apps.clones import tenancy

        cache = self.context.setdefault("usage", {})
        if tenant.pk not in cache:
            cache[tenant.pk] = tenancy.usage(tenant)
        return cache[tenant.pk]


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
        "The cluster's id as of the host's last discovery (what a clone is asked for with); "
        "null when discovery no longer finds it."))

    class Meta:
        model = ClusterAssignment
        fields = ["id", "tenant", "host", "cluster_data_dir", "cluster", "assigned_at"]
        read_only_fields = ["id", "assigned_at"]
        validators = []  # the service says which tenant holds a taken cluster

    def get_cluster(self, assignment: ClusterAssignment) -> int | None:
        from apps.clones import tenancy

        cluster = tenancy.cluster_of(assignment)
        return cluster.pk if cluster else None


class TokenSerializer(ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    revoked_by = serializers.CharField(source="revoked_by.username", read_only=True,
                                       allow_null=True, default=None)
    state = serializers.ChoiceField(choices=["active", "expired", "revoked"], read_only=True)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "hint", "username", "state", "created_at", "last_used_at",
                  "expires_at", "revoked_at", "revoked_by"]
        read_only_fields = fields


class TokenCreateSerializer(serializers.Serializer):
    name = StrictCharField(max_length=100, required=False, default="", allow_blank=True)
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None,
        help_text="Refused from this moment on; null: never expires.")


class IssuedTokenSerializer(TokenSerializer):
    token = serializers.SerializerMethodField(
        help_text="The token itself: shown this once, never stored.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]
        read_only_fields = fields

    def get_token(self, obj) -> str:
        return self.context["raw"]


class ClusterSnapshotSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The part after '@': what a clone is asked for with.")
    dataset = serializers.CharField()
    created_at = serializers.DateTimeField(allow_null=True)
    used = serializers.IntegerField(allow_null=True)
    label = serializers.CharField()
