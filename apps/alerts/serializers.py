from rest_framework import serializers

from apps.alerts.models import Alert, Channel, Delivery, Rule, ScrubSchedule, Silence
from apps.alerts.services import MAX_SILENCE_MINUTES
from apps.api.fields import (
    ModelSerializer,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.common import alert_kinds
from apps.fleet.models import Host


class RuleSerializer(ModelSerializer):
    """A built-in rule; its kind is its identity. Thresholds are checked per kind."""

    title = serializers.SerializerMethodField()
    unit = serializers.SerializerMethodField()
    evaluated_by_pozol = serializers.SerializerMethodField()

    class Meta:
        model = Rule
        fields = ["kind", "title", "unit", "evaluated_by_pozol", "enabled", "threshold",
                  "hysteresis", "for_minutes", "clear_minutes", "updated_at"]
        read_only_fields = ["kind", "updated_at"]
        extra_kwargs = {"for_minutes": {"max_value": 10080},
                        "clear_minutes": {"max_value": 10080}}

    def get_title(self, rule: Rule) -> str:
        spec = alert_kinds.get(rule.kind)
        return spec.title if spec else rule.kind

    def get_unit(self, rule: Rule) -> str:
        spec = alert_kinds.get(rule.kind)
        return spec.unit if spec else ""

    def get_evaluated_by_pozol(self, rule: Rule) -> bool:
        """False: raised and resolved where the product sees it (discovery, ticks)."""
        spec = alert_kinds.get(rule.kind)
        return spec.evaluated if spec else False


class ChannelSerializer(ModelSerializer):
    """Where alerts go: e-mail addresses (comma-separated) or a webhook URL the
    allowlist (POZOL_ALERT_WEBHOOK_ALLOW) permits."""

    class Meta:
        model = Channel
        fields = ["id", "name", "kind", "target", "enabled", "created_at"]
        read_only_fields = ["id", "created_at"]


class AlertSerializer(ModelSerializer):
    host = StrictPrimaryKeyRelatedField(read_only=True)
    kind = serializers.ChoiceField(choices=alert_kinds.Choices(), read_only=True)
    host_name = serializers.CharField(source="host.name", read_only=True)
    acknowledged_by = serializers.CharField(source="acknowledged_by.username", read_only=True,
                                            default=None, allow_null=True)

    class Meta:
        model = Alert
        fields = ["id", "host", "host_name", "kind", "message", "created_at", "resolved_at",
                  "notified_at", "resolution_notified_at", "acknowledged_at",
                  "acknowledged_by"]
        read_only_fields = fields


class SilenceRequestSerializer(serializers.Serializer):
    minutes = StrictIntegerField(min_value=1, max_value=MAX_SILENCE_MINUTES)
    reason = StrictCharField(max_length=300, required=False, default="", allow_blank=True)


class SilenceSerializer(ModelSerializer):
    host = StrictPrimaryKeyRelatedField(queryset=Host.objects.all(), allow_null=True,
                                        required=False)
    kind = serializers.ChoiceField(choices=alert_kinds.Choices(titles=False, blank="every kind"),
                                   required=False, default="")
    minutes = StrictIntegerField(min_value=1, max_value=MAX_SILENCE_MINUTES, write_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True,
                                       default=None, allow_null=True)

    class Meta:
        model = Silence
        fields = ["id", "host", "kind", "minutes", "until", "reason", "created_by",
                  "created_at"]
        read_only_fields = ["id", "until", "created_by", "created_at"]


class DeliverySerializer(ModelSerializer):
    channel = StrictPrimaryKeyRelatedField(read_only=True)
    channel_name = serializers.CharField(source="channel.name", read_only=True)
    alert = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)

    class Meta:
        model = Delivery
        fields = ["id", "alert", "channel", "channel_name", "event", "status", "attempts",
                  "next_attempt_at", "last_error", "log", "body", "created_at", "sent_at"]
        read_only_fields = fields


class ScrubScheduleSerializer(ModelSerializer):
    """A pool's scheduled scrub; `last_operation` is its latest run (progress, result)."""

    host = StrictPrimaryKeyRelatedField(queryset=Host.objects.all())
    last_operation = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    last_status = serializers.CharField(source="last_operation.status", read_only=True,
                                        default=None, allow_null=True)
    last_progress = serializers.IntegerField(source="last_operation.progress", read_only=True,
                                             default=None, allow_null=True)
    last_result = serializers.JSONField(source="last_operation.result", read_only=True,
                                        default=None, allow_null=True)

    class Meta:
        model = ScrubSchedule
        fields = ["id", "host", "pool", "every_days", "enabled", "next_at", "last_operation",
                  "last_status", "last_progress", "last_result", "created_at"]
        read_only_fields = ["id", "last_operation", "created_at"]
        extra_kwargs = {"next_at": {"required": False}}

    def validate(self, attrs: dict) -> dict:
        if self.instance is not None:
            for name in ("host", "pool"):
                if name in attrs and attrs[name] != getattr(self.instance, name):
                    raise serializers.ValidationError(
                        {name: ["a schedule's pool cannot change; make another"]})
        return attrs
