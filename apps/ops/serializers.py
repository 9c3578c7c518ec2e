from rest_framework import serializers

from apps.ops.models import LogLine, Operation


class LogLineSerializer(serializers.ModelSerializer):
    class Meta:
        model = LogLine
        fields = ["id", "at", "level", "text"]


class OperationSerializer(serializers.ModelSerializer):
    host = serializers.PrimaryKeyRelatedField(read_only=True)
    triggered_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Operation
        fields = ["id", "kind", "host", "subject", "mutating", "step", "status", "progress",
                  "message", "result", "error", "error_code", "attempts", "trigger",
                  "triggered_by", "created_at", "started_at", "finished_at", "deadline"]
        read_only_fields = fields


class OperationDetailSerializer(OperationSerializer):
    log = LogLineSerializer(source="log_lines", many=True, read_only=True)

    class Meta(OperationSerializer.Meta):
        fields = OperationSerializer.Meta.fields + ["log"]
        read_only_fields = fields
