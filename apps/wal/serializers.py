"""WAL archives as the API shows them, and what enabling and disabling take.

The serializers take each value in its JSON type and range; apps.wal.services checks
the rest (the cluster usable, the timeout) and refuses with the field named."""

from __future__ import annotations

from datetime import UTC, datetime

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.api.fields import (
    ModelSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.fleet.models import PgCluster
from apps.wal.core.plan import DEFAULT_TIMEOUT, MAX_TIMEOUT, MIN_TIMEOUT
from apps.wal.models import RestorePoint, WalArchive


class RestorePointSerializer(ModelSerializer):
    class Meta:
        model = RestorePoint
        fields = ["name", "lsn", "created_at"]
        read_only_fields = fields


class NewRestorePointSerializer(serializers.Serializer):
    name = StrictCharField(max_length=63, trim_whitespace=False, help_text=(
        "1-63 letters, digits and _ . : - (starting with a letter or digit)."))


class WalArchiveSerializer(ModelSerializer):
    cluster = StrictPrimaryKeyRelatedField(read_only=True)
    host = serializers.IntegerField(source="cluster.host_id", read_only=True)
    data_dir = serializers.CharField(source="cluster.data_dir", read_only=True)
    last_operation = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    restore_points = RestorePointSerializer(many=True, read_only=True)
    window = serializers.SerializerMethodField(help_text=(
        "Moments a clone can be made for, as the last check found them: "
        "[{since, until}], oldest first (more than one around a gap)."))

    class Meta:
        model = WalArchive
        fields = ["id", "cluster", "host", "data_dir", "dataset", "directory",
                  "archive_timeout", "state", "error", "enabled_at", "checked_at", "read_error",
                  "archived_count", "failed_count", "last_archived_wal", "last_archived_at",
                  "last_failed_wal", "last_failed_at", "failure_reason", "failure_reason_wal",
                  "failure_reason_at", "command_outdated", "current_wal", "lag_segments",
                  "space_used", "space_available", "segments", "first_segment",
                  "last_segment", "gaps", "window", "removed", "restore_points", "last_operation"]
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_window(self, archive: WalArchive) -> list[dict]:
        return [{"since": _iso(since), "until": _iso(until)}
                for since, until in archive.window or []]


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


class WalEnableSerializer(serializers.Serializer):
    cluster = StrictPrimaryKeyRelatedField(queryset=PgCluster.objects.all(),
                                           help_text="The PostgreSQL cluster (id).")
    archive_timeout = StrictIntegerField(
        required=False, default=DEFAULT_TIMEOUT, min_value=MIN_TIMEOUT, max_value=MAX_TIMEOUT,
        help_text="Seconds: PostgreSQL switches to a new segment at least this often, so "
                  "no moment waits longer to be archived.")
    dry_run = StrictBooleanField(required=False, default=False, help_text=(
        "true: answer the plan (200) and change nothing."))


class WalDisableSerializer(serializers.Serializer):
    dry_run = StrictBooleanField(required=False, default=False, help_text=(
        "true: answer the plan (200) and change nothing."))


class WalChangeSerializer(serializers.Serializer):
    setting = serializers.CharField()
    before = serializers.CharField()
    after = serializers.CharField()
    applies = serializers.CharField(help_text="restart or reload")
    changes = serializers.BooleanField()


class WalPlanSerializer(serializers.Serializer):
    dataset = serializers.CharField()
    create_dataset = serializers.BooleanField()
    restart = serializers.BooleanField(help_text="PostgreSQL is restarted.")
    changes = WalChangeSerializer(many=True)


class WalEnabledSerializer(serializers.Serializer):
    archive = WalArchiveSerializer()
    operation = serializers.IntegerField()
    plan = WalPlanSerializer()
