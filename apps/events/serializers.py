from rest_framework import serializers

from apps.api.fields import ModelSerializer, StrictCharField, StrictPrimaryKeyRelatedField
from apps.common import events as registry
from apps.events.models import Delivery, Event, Subscription


class EventSubscriptionSerializer(ModelSerializer):
    """A URL the webhook allowlist (POZOL_ALERT_WEBHOOK_ALLOW) permits and the event kinds
    sent to it, signed with its secret (shown once, in the answer that made it or
    rotated it)."""

    url = StrictCharField(max_length=2000)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=registry.Choices()), min_length=1,
        max_length=50, help_text="Event kinds, by name (GET /api/event-kinds/ lists them).")

    class Meta:
        model = Subscription
        fields = ["id", "name", "url", "events", "enabled", "created_at"]
        read_only_fields = ["id", "created_at"]


class EventSubscriptionCreatedSerializer(EventSubscriptionSerializer):
    secret = serializers.CharField(read_only=True, help_text=(
        "HMAC-SHA256 key of X-PoZoL-Signature; shown only here."))

    class Meta(EventSubscriptionSerializer.Meta):
        fields = [*EventSubscriptionSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class EventKindSerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()


class EventSerializer(ModelSerializer):
    class Meta:
        model = Event
        fields = ["id", "kind", "subject", "data", "created_at"]
        read_only_fields = fields


class EventDeliverySerializer(ModelSerializer):
    subscription = StrictPrimaryKeyRelatedField(read_only=True)
    subscription_name = serializers.CharField(source="subscription.name", read_only=True)
    event = serializers.UUIDField(source="event_id", read_only=True)
    kind = serializers.CharField(source="event.kind", read_only=True)

    class Meta:
        model = Delivery
        fields = ["id", "subscription", "subscription_name", "event", "kind", "status",
                  "attempts", "next_attempt_at", "last_error", "log", "created_at", "sent_at"]
        read_only_fields = fields
