"""/api/event-subscriptions/, /api/events/, /api/event-deliveries/ and /api/event-kinds/:
operator-only (the API's default), each calling services."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.api.pagination import CursorOrPages
from apps.common import events as registry
from apps.events import services
from apps.events.filters import DeliveryFilter, EventFilter
from apps.events.models import Delivery, Event, Subscription
from apps.events.serializers import (
    EventDeliverySerializer,
    EventKindSerializer,
    EventSerializer,
    EventSubscriptionCreatedSerializer,
    EventSubscriptionSerializer,
)


class SubscriptionViewSet(viewsets.ModelViewSet):
    """Where events go. The answer to POST (and to rotate-secret) carries the secret the
    bodies are signed with, once; POST {id}/ping/ sends a test event to this one."""

    queryset = Subscription.objects.select_related("created_by")
    serializer_class = EventSubscriptionSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    @extend_schema(responses={201: EventSubscriptionCreatedSerializer})
    def create(self, request, *args, **kwargs) -> Response:
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        made = services.create_subscription(by=request.user, **body.validated_data)
        return Response(EventSubscriptionCreatedSerializer(made).data,
                        status=status.HTTP_201_CREATED)

    def perform_update(self, serializer) -> None:
        serializer.instance = services.update_subscription(serializer.instance,
                                                           **serializer.validated_data)

    def perform_destroy(self, instance) -> None:
        services.delete_subscription(instance)

    @extend_schema(request=None, responses={200: EventSubscriptionCreatedSerializer})
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request, pk=None) -> Response:
        made = services.rotate_secret(self.get_object())
        return Response(EventSubscriptionCreatedSerializer(made).data)

    @extend_schema(request=None, responses={202: EventDeliverySerializer})
    @action(detail=True, methods=["post"])
    def ping(self, request, pk=None) -> Response:
        row = services.ping(self.get_object())
        return Response(EventDeliverySerializer(row).data, status=status.HTTP_202_ACCEPTED)


class EventViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Events as they were recorded, newest first; `id` is what receivers dedupe by."""

    pagination_class = CursorOrPages

    queryset = Event.objects.all()
    serializer_class = EventSerializer
    cursor_ordering = "-created_at"  # ids are UUIDs: time orders them
    filterset_class = EventFilter


class DeliveryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                      viewsets.GenericViewSet):
    """The delivery log: every event per subscription, with each attempt; POST
    {id}/redeliver/ sends the same event (same id) again."""

    pagination_class = CursorOrPages

    queryset = Delivery.objects.select_related("subscription", "event")
    serializer_class = EventDeliverySerializer
    filterset_class = DeliveryFilter

    @extend_schema(request=None, responses={202: EventDeliverySerializer})
    @action(detail=True, methods=["post"])
    def redeliver(self, request, pk=None) -> Response:
        row = services.redeliver(self.get_object())
        return Response(EventDeliverySerializer(row).data, status=status.HTTP_202_ACCEPTED)


class EventKindsView(APIView):
    """Every event kind a subscription may name."""

    @extend_schema(responses={200: EventKindSerializer(many=True)})
    def get(self, request) -> Response:
        kinds = [k for k in registry.kinds() if k.name != services.PING.name]
        return Response(EventKindSerializer(kinds, many=True).data)
