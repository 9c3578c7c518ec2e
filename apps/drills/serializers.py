"""Drill schedules and runs as the API shows and takes them; apps.drills.services checks
every value again (the query's shape, the interval, the cluster or link)."""

from __future__ import annotations

from rest_framework import serializers

from apps.api.fields import (
    ModelSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.clones.serializers import AwareDateTimeField
from apps.drills.core.check import QUERY_MAX
from apps.drills.models import DrillRun, DrillSchedule
from apps.drills.services import MAX_INTERVAL_HOURS
from apps.fleet.models import Host, PgCluster
from apps.replication.models import ReplicationLink


class DrillScheduleSerializer(ModelSerializer):
    host = StrictPrimaryKeyRelatedField(read_only=True)
    link = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    source_label = serializers.CharField(read_only=True)

    class Meta:
        model = DrillSchedule
        fields = ["id", "host", "cluster_data_dir", "link", "source_label", "interval_hours",
                  "check_query", "target", "enabled", "last_started_at", "created_at"]
        read_only_fields = fields


class DrillScheduleWriteSerializer(serializers.Serializer):
    """A cluster (with its host) or a link; both only when creating."""

    host = StrictPrimaryKeyRelatedField(queryset=Host.objects.all(), required=False)
    cluster = StrictPrimaryKeyRelatedField(queryset=PgCluster.objects.all(), required=False,
                                           help_text="A PostgreSQL cluster of that host.")
    link = StrictPrimaryKeyRelatedField(queryset=ReplicationLink.objects.all(), required=False,
                                        help_text="A link copying a cluster: the drill runs "
                                                  "on its target, from what it received.")
    interval_hours = StrictIntegerField(min_value=1, max_value=MAX_INTERVAL_HOURS, default=24)
    check_query = StrictCharField(required=False, allow_blank=True, max_length=QUERY_MAX,
                                  default="", trim_whitespace=False)
    target = serializers.ChoiceField(
        choices=DrillSchedule.Target.choices, default=DrillSchedule.Target.SNAPSHOT,
        help_text="snapshot: the newest snapshot; random_moment: a moment drawn in the "
                  "cluster's WAL archive's window, replayed to, and checked to be reached "
                  "(the last replayed transaction within archive_timeout before it).")
    enabled = StrictBooleanField(default=True)


class DrillRunNowSerializer(serializers.Serializer):
    """Optional: a moment to replay the drill's clone to (a time with its zone)."""

    at = AwareDateTimeField(required=False, help_text=(
        "Replay to this moment (ISO 8601 with its zone) instead of the schedule's target."))


class DrillRunSerializer(ModelSerializer):
    host = StrictPrimaryKeyRelatedField(read_only=True)
    host_name = serializers.CharField(source="host.name", read_only=True)
    schedule = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    link = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    operation = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)

    class Meta:
        model = DrillRun
        fields = ["id", "schedule", "host", "host_name", "cluster_data_dir", "link",
                  "snapshot", "datasets", "check_query", "status", "clone_seconds",
                  "start_seconds", "check_seconds", "destroy_seconds", "total_seconds",
                  "answers", "error", "log_tail", "target_time", "reached_at",
                  "archive_timeout", "started_at", "finished_at", "operation"]
        read_only_fields = fields


class RecoverTableSerializer(serializers.Serializer):
    """Copy a table as it was at a snapshot back into its cluster under a new name. The
    names are checked by the service (400 naming the field)."""

    database = serializers.CharField(trim_whitespace=False)
    table = serializers.CharField(trim_whitespace=False,
                                  help_text="name or schema.name (public when no schema)")
    into = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False,
                                 help_text="the recovered table's name in the same schema; "
                                           "default <table>_recovered. Never overwritten.")


class RecoverTableAtSerializer(RecoverTableSerializer):
    """The same as of a moment: exactly one of `at`, `lsn` or `restore_point`; the clone
    is then a point-in-time clone of the cluster (its WAL archived by PoZoL)."""

    at = AwareDateTimeField(required=False, help_text=(
        "A moment with its time zone (ISO 8601, e.g. 2026-11-20T14:06:00+01:00): the table "
        "as the last transaction committed by then left it. Refused (400, with the window) "
        "outside the recoverable window, in the future or past a gap."))
    lsn = StrictCharField(required=False, max_length=17, trim_whitespace=False,
                          help_text="A WAL position as PostgreSQL prints one (16/B374D848).")
    restore_point = StrictCharField(required=False, max_length=63, trim_whitespace=False,
                                    help_text="The name of a restore point PoZoL made.")

    def validate(self, attrs: dict) -> dict:
        given = [name for name in ("at", "lsn", "restore_point") if name in attrs]
        if len(given) != 1:
            raise serializers.ValidationError({"at": [
                "give exactly one of at, lsn or restore_point"]})
        return attrs
