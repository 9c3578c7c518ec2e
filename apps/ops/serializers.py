from rest_framework import serializers

from apps.api.fields import ModelSerializer, StrictPrimaryKeyRelatedField
from apps.ops.models import LogLine, Operation


class LogLineSerializer(ModelSerializer):
    class Meta:
        model = LogLine
        fields = ["id", "at", "level", "text"]


class OperationSerializer(ModelSerializer):
    # Null once the host is deleted (operations are kept as history) or when
    # the schedule, not a person, started it.
    host = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    triggered_by = serializers.SlugRelatedField(slug_field="username", read_only=True,
                                                allow_null=True)

    class Meta:
        model = Operation
        fields = ["id", "kind", "host", "subject", "mutating", "step", "status", "progress",
                  "message", "result", "error", "error_code", "attempts", "trigger",
                  "triggered_by", "created_at", "started_at", "finished_at", "deadline"]
        read_only_fields = fields

    # The columns the fields above read, for .only(): the list must not read the
    # step state (a host's whole facts between discovery steps) or join the host.
    COLUMNS = [*(f for f in Meta.fields if f != "triggered_by"), "triggered_by__username"]


class OperationDetailSerializer(OperationSerializer):
    log = LogLineSerializer(source="log_lines", many=True, read_only=True)

    class Meta(OperationSerializer.Meta):
        fields = OperationSerializer.Meta.fields + ["log"]
        read_only_fields = fields
