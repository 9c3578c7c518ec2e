"""Clones and the hosts' clone settings as the API shows and takes them.

apps.clones.services checks every value (names, roles, spans, ports, CIDRs)
against the core and the inventory; these serializers take each value in its
JSON type and range, so the schema documents them; names, roles and snapshots
are not trimmed, so "dev\n" is refused rather than quietly read as "dev". A
clone is never shown with its password or the password's encrypted form: only
the answer to its creation carries the password, once.
"""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.accounts.roles import is_operator
from apps.api.fields import (
    ModelSerializer,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.clones import services, tenancy
from apps.clones.core.layout import (
    CLONE_MEMORY,
    DEFAULT_CLONE_QUOTA,
    MIN_CLONE_QUOTA,
    NAME_MAX,
    UID_BASE,
    UID_BASE_MAX,
    UID_BASE_MIN,
)
from apps.clones.models import Clone, CloneHostSettings
from apps.fleet.models import Host, PgCluster
from apps.ops.serializers import OperationSerializer
from apps.replication.models import ReplicationLink

MAX_MINUTES = int(services.MAX_TTL.total_seconds() // 60)
# For the schema, so clients (and the fuzzer) know the shapes; the service checks again.
NAME_SHAPE = RegexValidator(r"^([a-z][a-z0-9-]*)?$", "a-z 0-9 - starting with a letter")
ROLE_SHAPE = RegexValidator(r"^[a-z_][a-z0-9_$]*$", "lower-case letters, digits, _ and $")


class CloneSerializer(ModelSerializer):
    host = StrictPrimaryKeyRelatedField(read_only=True)
    host_name = serializers.CharField(source="host.name", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True,
                                              allow_null=True)
    last_operation = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    protected = serializers.BooleanField(read_only=True,
                                         help_text="Destroy is refused until protected_until.")
    used = serializers.IntegerField(source="space", read_only=True, allow_null=True, help_text=(
        "Bytes the clone's datasets use (grows as it diverges); null until the clones tick "
        "or a listing of the host has read them."))
    tenant = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    link = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True, help_text=(
        "The replication link on whose target host the clone was made from the copies it "
        "received; null for a clone on the cluster's own host."))
    reached_note = serializers.CharField(read_only=True, help_text=(
        "For a clone to a moment: said when the last transaction replayed is further from "
        "the moment asked than the origin's archive_timeout; else empty."))
    operation = serializers.SerializerMethodField(help_text=(
        "The clone's last operation (creating, resetting, destroying): its status, progress "
        "and message, for following it live."))

    class Meta:
        model = Clone
        fields = ["id", "host", "host_name", "cluster_data_dir", "name", "snapshot", "port",
                  "role", "state", "connection_string", "expires_at", "protected_until",
                  "protected", "used", "error", "ready_at", "created_at", "created_by",
                  "tenant", "last_operation", "operation", "target_time", "target_lsn",
                  "target_name", "reached_at", "reached_note", "link"]
        read_only_fields = fields


    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_operation(self, clone: Clone) -> dict | None:
        operation = clone.last_operation
        if operation is None:
            return None
        return {"id": operation.pk, "kind": operation.kind, "status": operation.status,
                "progress": operation.progress, "message": operation.message,
                "error": operation.error}


class AwareDateTimeField(serializers.DateTimeField):
    """A moment with its time zone: one without is refused, never read as UTC."""

    default_error_messages = {"naive": "Give the moment with its time zone (e.g. "
                                       "2026-11-20T14:06:00+01:00, or Z for UTC)."}

    def to_internal_value(self, value):
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value)
            except ValueError:  # well formed, but no such day: DRF's own "invalid"
                parsed = None
            if parsed is not None and parsed.tzinfo is None:
                self.fail("naive")
        return super().to_internal_value(value)


class CloneCreateSerializer(serializers.Serializer):
    host = StrictPrimaryKeyRelatedField(queryset=Host.objects.all(), required=False, help_text=(
        "The cluster's host (id), or with `link` the link's target host; left out: that "
        "host."))
    cluster = StrictPrimaryKeyRelatedField(
        queryset=PgCluster.objects.all(), help_text=(
            "A PostgreSQL cluster (id): for a tenant's member, one of its tenant's."))

    def __init__(self, *args, user=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if user is not None:
            # Another tenant's cluster (or its host) "does not exist", like a missing one.
            clusters = tenancy.visible_clusters(user)
            self.fields["cluster"].queryset = clusters
            self.fields["host"].queryset = Host.objects.filter(
                pk__in=clusters.values("host_id"))
            if not is_operator(user):  # links are the operators'
                self.fields["link"].queryset = ReplicationLink.objects.none()
    snapshot = StrictCharField(required=False, max_length=255, trim_whitespace=False, help_text=(
        "The part after '@' of a snapshot of the cluster's data (and WAL) dataset; left out: "
        "a fresh snapshot is taken first (\"now\")."))
    link = StrictPrimaryKeyRelatedField(
        queryset=ReplicationLink.objects.all(), required=False, help_text=(
            "Operators: make the clone on this replication link's target host, from the "
            "snapshots it received and the copy of the WAL archive it carried, to a moment "
            "(at, lsn or restore_point; `cluster` is the link's source cluster). Refused "
            "(400/409, the target's window in the message) when the copy does not reach it."))
    name = StrictCharField(required=False, allow_blank=True, default="", max_length=NAME_MAX,
                           trim_whitespace=False, validators=[NAME_SHAPE],
                           help_text="a-z 0-9 - starting with a letter; empty: one is made up.")
    at = AwareDateTimeField(required=False, help_text=(
        "Instead of a snapshot, a moment with its time zone (ISO 8601, e.g. "
        "2026-11-20T14:06:00+01:00): the newest snapshot before it is replayed forward "
        "with the cluster's archived WAL (archiving on) to the last transaction committed "
        "by then. Refused (400) outside the window, in the future or past a gap."))
    lsn = StrictCharField(required=False, max_length=17, trim_whitespace=False, help_text=(
        "Instead of a snapshot, a WAL position as PostgreSQL prints one (16/B374D848): "
        "replayed to it from the newest snapshot PoZoL marked before it."))
    restore_point = StrictCharField(required=False, max_length=63, trim_whitespace=False,
                                    help_text=(
        "Instead of a snapshot, the name of a restore point PoZoL made for the cluster "
        "(POST /api/wal-archives/{id}/restore-points/): replayed to it."))
    ttl_minutes = StrictIntegerField(required=False, allow_null=True, default=None,
                                     min_value=1, max_value=MAX_MINUTES,
                                     help_text="Destroyed this long after creation; null: kept.")
    protected_minutes = StrictIntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=MAX_MINUTES,
        help_text="Destroy (by hand or by TTL) is refused for this long.")
    role = StrictCharField(required=False, default="dev", max_length=63,
                           trim_whitespace=False, validators=[ROLE_SHAPE], help_text=(
        "The role the password is for: lower-case letters, digits, _ and $; not the "
        "cluster's superuser."))


class CloneResetSerializer(serializers.Serializer):
    snapshot = StrictCharField(required=False, max_length=255, trim_whitespace=False, help_text=(
        "The part after '@' of a snapshot of the origin cluster; left out: a fresh "
        "snapshot is taken first (\"now\")."))


class CloneCreatedSerializer(serializers.Serializer):
    clone = CloneSerializer()
    operation = OperationSerializer()
    password = serializers.CharField(help_text="The clone role's password: shown in this "
                                               "answer only, never again.")


class CloneSettingsSerializer(ModelSerializer):
    """What an operator allows clones on one host. allowed_networks empty: the clone's
    role may connect from 127.0.0.0/8 only."""

    port_min = StrictIntegerField(min_value=services.PORT_FLOOR,
                                  max_value=services.PORT_CEILING)
    port_max = StrictIntegerField(min_value=services.PORT_FLOOR,
                                  max_value=services.PORT_CEILING)
    listen_address = serializers.IPAddressField(
        required=False, allow_null=True, default=None,
        help_text="The address clones listen on; null: the host's address.")
    allowed_networks = serializers.ListField(
        child=StrictCharField(max_length=49), max_length=services.MAX_NETWORKS,
        help_text="CIDRs the clone's role may connect from, e.g. 10.0.0.0/8.")
    memory_limit = StrictIntegerField(
        required=False, allow_null=True, default=None, min_value=CLONE_MEMORY,
        max_value=services.MAX_MEMORY_LIMIT,
        help_text="Bytes of RAM all clones on the host may take together (each counts "
                  f"{CLONE_MEMORY}); null: no limit.")
    uid_base = StrictIntegerField(
        required=False, min_value=UID_BASE_MIN, max_value=UID_BASE_MAX,
        help_text="A clone's PostgreSQL runs as OS uid and gid uid_base + its port, with no "
                  f"passwd entry (default {UID_BASE}); left out: unchanged.")
    clone_quota = StrictIntegerField(
        required=False, default=DEFAULT_CLONE_QUOTA, min_value=MIN_CLONE_QUOTA,
        max_value=services.MAX_CLONE_QUOTA,
        help_text="The ZFS quota of each new clone (bytes, data and WAL together), unless "
                  "its tenant's clone space leaves less.")
    effective_allowed_networks = serializers.SerializerMethodField()

    class Meta:
        model = CloneHostSettings
        fields = ["port_min", "port_max", "listen_address", "allowed_networks",
                  "memory_limit", "uid_base", "clone_quota", "effective_allowed_networks"]

    def validate(self, values: dict) -> dict:
        if values["port_min"] > values["port_max"]:
            raise serializers.ValidationError({"port_max": [
                f"at least port_min ({values['port_min']})"]})
        return values

    @extend_schema_field(serializers.ListField(child=serializers.CharField(), help_text=(
        "What pg_hba lets the role in from: allowed_networks, or 127.0.0.0/8 when empty.")))
    def get_effective_allowed_networks(self, limits: CloneHostSettings) -> list[str]:
        return list(limits.allowed_networks or CloneHostSettings.DEFAULT_ALLOWED)


class ClusterSnapshotSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The part after '@': what a clone is asked for with.")
    dataset = serializers.CharField()
    created_at = serializers.DateTimeField(allow_null=True)
    used = serializers.IntegerField(allow_null=True)
    label = serializers.CharField()


class TenantUsageSerializer(serializers.Serializer):
    tenant = serializers.IntegerField()
    name = serializers.CharField()
    clones = serializers.IntegerField(help_text="Its clones not destroyed.")
    space = serializers.IntegerField(help_text="Bytes they use together (ZFS used, as the "
                                               "clones tick last read it).")
    max_clones = serializers.IntegerField(allow_null=True)
    max_clone_space = serializers.IntegerField(allow_null=True)
    max_clone_ttl_minutes = serializers.IntegerField(allow_null=True)
    clone_idle_minutes = serializers.IntegerField(allow_null=True)
