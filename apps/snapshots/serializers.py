from rest_framework import serializers

from apps.accounts.api_fields import (
    ModelSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictPrimaryKeyRelatedField,
)
from apps.fleet.models import PgCluster
from apps.snapshots.commands import MAX_LABEL
from apps.snapshots.models import Snapshot


class SnapshotSerializer(ModelSerializer):
    host = StrictPrimaryKeyRelatedField(read_only=True)
    full_name = serializers.CharField(read_only=True)
    held = serializers.BooleanField(read_only=True)

    class Meta:
        model = Snapshot
        fields = ["id", "host", "dataset", "name", "full_name", "created_at", "used",
                  "referenced", "userrefs", "held", "clones", "origin", "policy_name", "label",
                  "properties", "seen_at"]
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
