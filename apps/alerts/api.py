"""/api/alert-rules/, /api/alert-channels/, /api/alerts/, /api/alert-silences/ and
/api/alert-deliveries/: operator-only (the API's default), each calling services."""

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.alerts import rules, services
from apps.alerts.filters import AlertFilter, DeliveryFilter
from apps.alerts.models import Alert, Channel, Delivery, Rule, ScrubSchedule, Silence
from apps.alerts.serializers import (
    AlertSerializer,
    ChannelSerializer,
    DeliverySerializer,
    RuleSerializer,
    ScrubScheduleSerializer,
    SilenceRequestSerializer,
    SilenceSerializer,
)
from apps.api.idempotency import IdempotentPosts
from apps.ops.models import Operation
from apps.ops.serializers import OperationSerializer


class RuleViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin,
                  viewsets.GenericViewSet):
    """The built-in rules, one per alert kind (by kind), and their thresholds."""

    queryset = Rule.objects.all()
    serializer_class = RuleSerializer
    lookup_field = "kind"
    lookup_value_regex = "[a-z_]+"

    def get_queryset(self) -> QuerySet:
        rules.ensure()
        return super().get_queryset()

    def perform_update(self, serializer) -> None:
        serializer.instance = services.update_rule(serializer.instance,
                                                   **serializer.validated_data)


class ChannelViewSet(viewsets.ModelViewSet):
    """Delivery channels; POST {id}/test/ sends a test message through the log."""

    queryset = Channel.objects.all()
    serializer_class = ChannelSerializer

    def perform_create(self, serializer) -> None:
        serializer.instance = services.save_channel(Channel(**serializer.validated_data))

    def perform_update(self, serializer) -> None:
        channel = serializer.instance
        for name, value in serializer.validated_data.items():
            setattr(channel, name, value)
        serializer.instance = services.save_channel(channel)

    def perform_destroy(self, instance) -> None:
        services.delete_channel(instance)

    @extend_schema(request=None, responses={202: DeliverySerializer})
    @action(detail=True, methods=["post"])
    def test(self, request, pk=None) -> Response:
        row = services.test_channel(self.get_object())
        return Response(DeliverySerializer(row).data, status=status.HTTP_202_ACCEPTED)


class AlertViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Alerts that fired, newest first (`?open=true` for the open ones), with history."""

    # Not the host's facts (about 68 KB of JSON each): an alert shows its host's name.
    queryset = Alert.objects.select_related("host", "acknowledged_by").defer("host__facts")
    serializer_class = AlertSerializer
    filterset_class = AlertFilter

    @extend_schema(request=None, responses={200: AlertSerializer})
    @action(detail=True, methods=["post"])
    def acknowledge(self, request, pk=None) -> Response:
        alert = services.acknowledge(self.get_object(), request.user)
        return Response(AlertSerializer(alert).data)

    @extend_schema(request=SilenceRequestSerializer, responses={201: SilenceSerializer})
    @action(detail=True, methods=["post"])
    def silence(self, request, pk=None) -> Response:
        body = SilenceRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        made = services.silence_alert(self.get_object(), by=request.user,
                                      **body.validated_data)
        return Response(SilenceSerializer(made).data, status=status.HTTP_201_CREATED)


class SilenceViewSet(mixins.CreateModelMixin, mixins.ListModelMixin,
                     mixins.RetrieveModelMixin, mixins.DestroyModelMixin,
                     viewsets.GenericViewSet):
    """Silences (a host, a kind, or both; empty means all); DELETE ends one now."""

    queryset = Silence.objects.select_related("created_by")
    serializer_class = SilenceSerializer

    def perform_create(self, serializer) -> None:
        data = serializer.validated_data
        serializer.instance = services.silence(
            host=data.get("host"), kind=data.get("kind", ""), minutes=data["minutes"],
            reason=data.get("reason", ""), by=self.request.user)

    def perform_destroy(self, instance) -> None:
        services.end_silence(instance)


class DeliveryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                      viewsets.GenericViewSet):
    """The delivery log: every alert event per channel, with each attempt."""

    queryset = Delivery.objects.select_related("channel")
    serializer_class = DeliverySerializer
    filterset_class = DeliveryFilter


class ScrubScheduleViewSet(IdempotentPosts, viewsets.ModelViewSet):
    """Scheduled `zpool scrub` per pool (default every 30 days); POST {id}/run/ starts
    one now. Progress and result are the run's operation (`last_operation`)."""

    queryset = ScrubSchedule.objects.select_related("host", "last_operation")
    serializer_class = ScrubScheduleSerializer

    def perform_create(self, serializer) -> None:
        data = serializer.validated_data
        serializer.instance = services.schedule_scrub(
            data["host"], data["pool"], every_days=data.get("every_days", 30),
            next_at=data.get("next_at"), enabled=data.get("enabled", True))

    def perform_update(self, serializer) -> None:
        changes = {k: v for k, v in serializer.validated_data.items()
                   if k not in ("host", "pool")}
        serializer.instance = services.update_scrub_schedule(serializer.instance, **changes)

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def run(self, request, pk=None) -> Response:
        operation = services.scrub_now(self.get_object(), by=request.user,
                                       trigger=Operation.Trigger.API)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)
