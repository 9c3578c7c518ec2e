from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.ops import engine
from apps.ops.models import Operation
from apps.ops.serializers import OperationDetailSerializer, OperationSerializer


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("host", int, description="only this host's operations"),
    OpenApiParameter("status", str, enum=[s.value for s in Operation.Status]),
    OpenApiParameter("kind", str),
]))
class OperationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                       viewsets.GenericViewSet):
    """Operations: every unit of remote work, with progress and log."""

    queryset = Operation.objects.select_related("host", "triggered_by")

    def get_serializer_class(self):
        return OperationSerializer if self.action == "list" else OperationDetailSerializer

    def get_queryset(self):
        queryset = super().get_queryset()
        for field in ("host", "status", "kind"):
            if value := self.request.query_params.get(field):
                queryset = queryset.filter(**{field: value})
        return queryset

    @extend_schema(request=None, responses=OperationDetailSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        operation = self.get_object()
        engine.cancel(operation, f"cancelled by {request.user.username}")
        operation.refresh_from_db()
        return Response(OperationDetailSerializer(operation).data)
