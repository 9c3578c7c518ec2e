from rest_framework import serializers

from apps.api.fields import (
    ModelSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.fleet.models import Host, PgCluster
from apps.snapshots.core.commands import MAX_LABEL
from apps.snapshots.core.policy import Policy, PolicyError
from apps.snapshots.models import PolicyAssignment, Snapshot, SnapshotPolicy


class SnapshotSerializer(ModelSerializer):
    host = StrictPrimaryKeyRelatedField(read_only=True)
    full_name = serializers.CharField(read_only=True)
    held = serializers.BooleanField(read_only=True)
    holds = serializers.ListField(
        child=serializers.CharField(), read_only=True,
        help_text="The tags of its holds (`zfs holds`), e.g. pozol; empty where the host's "
                  "ZFS cannot list them (zfs-fuse), where userrefs still counts them.")

    class Meta:
        model = Snapshot
        fields = ["id", "host", "dataset", "name", "full_name", "created_at", "used",
                  "referenced", "userrefs", "holds", "held", "clones", "origin", "policy_name",
                  "label", "properties", "seen_at"]
        read_only_fields = fields


class SnapshotCreateSerializer(serializers.Serializer):
    """Snapshot now: a cluster (its data and WAL datasets together) or one dataset."""

    cluster = StrictPrimaryKeyRelatedField(
        queryset=PgCluster.objects.all(), required=False,
        help_text="A PostgreSQL cluster of the host: its data and WAL datasets are "
                  "snapshotted together, crash-consistently.")
    dataset = StrictCharField(required=False, max_length=255,
                              help_text="Or one dataset of the host, e.g. tank/pg/data.")
    label = StrictCharField(required=False, allow_blank=True, default="", max_length=MAX_LABEL,
                            help_text="Kept in the pozol:label property.")
    hold = StrictBooleanField(required=False, default=False,
                              help_text="Hold the new snapshot(s) (tag 'pozol').")
    checkpoint = StrictBooleanField(required=False, default=False,
                                    help_text="Run CHECKPOINT on the cluster first.")


class SnapshotRollbackSerializer(serializers.Serializer):
    """Roll the snapshot's cluster back to it (data and WAL together)."""

    destroy_newer = StrictBooleanField(
        required=False, default=False,
        help_text="Allow `zfs rollback -r` to destroy the snapshots newer than this one "
                  "(held, cloned and replication-protected ones are refused whatever this says).")


class SnapshotPolicySerializer(ModelSerializer):
    """A snapshot policy; `name` is its identity on ZFS and cannot change once created."""

    class Meta:
        model = SnapshotPolicy
        fields = ["id", "name", "prefix", "frequently", "frequent_minutes", "hourly", "daily",
                  "weekly", "monthly", "checkpoint", "enabled", "created_at", "updated_at"]
        read_only_fields = ["id", "created_at", "updated_at"]

    def validate(self, attrs: dict) -> dict:
        if self.instance is not None and attrs.get("name", self.instance.name) \
                != self.instance.name:
            raise serializers.ValidationError(
                {"name": ["a policy's name is its identity on ZFS and cannot change"]})
        base = self.instance.core_values() if self.instance else {}
        core = {k: v for k, v in attrs.items() if k in Policy.__dataclass_fields__}
        try:
            Policy(**{**base, **core})
        except PolicyError as exc:
            raise serializers.ValidationError({exc.field: [str(exc)]}) from None
        return attrs


class PolicyPreviewSerializer(serializers.Serializer):
    """The proposed values (any of them); the others stay as saved."""

    prefix = StrictCharField(required=False, max_length=32)
    frequently = StrictIntegerField(required=False, min_value=0)
    frequent_minutes = StrictIntegerField(required=False, min_value=1)
    hourly = StrictIntegerField(required=False, min_value=0)
    daily = StrictIntegerField(required=False, min_value=0)
    weekly = StrictIntegerField(required=False, min_value=0)
    monthly = StrictIntegerField(required=False, min_value=0)


class PreviewTargetSerializer(serializers.Serializer):
    host = serializers.CharField()
    target = serializers.CharField()
    destroy = serializers.ListField(child=serializers.CharField(),
                                    help_text="What the next prune would destroy.")
    added = serializers.ListField(child=serializers.CharField(),
                                  help_text="Destroyed under the change, kept as saved.")
    spared = serializers.ListField(child=serializers.CharField(),
                                   help_text="Kept under the change, destroyed as saved.")


class PolicyAssignmentSerializer(ModelSerializer):
    """A policy given to a cluster (by data directory) or to one dataset of a host."""

    policy = StrictPrimaryKeyRelatedField(queryset=SnapshotPolicy.objects.all())
    host = StrictPrimaryKeyRelatedField(queryset=Host.objects.all())
    cluster_data_dir = StrictCharField(required=False, allow_blank=True, default="",
                                       max_length=1024)
    dataset = StrictCharField(required=False, allow_blank=True, default="", max_length=255)

    class Meta:
        model = PolicyAssignment
        fields = ["id", "policy", "host", "cluster_data_dir", "dataset", "assigned_at"]
        read_only_fields = ["id", "assigned_at"]


class PolicyPreviewResultSerializer(serializers.Serializer):
    targets = PreviewTargetSerializer(many=True, help_text="One entry per assigned target.")
