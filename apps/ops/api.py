from drf_spectacular.utils import extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from apps.api.pagination import CursorOrPages
from apps.ops import engine
from apps.ops.filters import OperationFilter
from apps.ops.models import Operation
from apps.ops.serializers import OperationDetailSerializer, OperationSerializer


class OperationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                       viewsets.GenericViewSet):
    """Operations: every unit of remote work, with progress and log."""

    pagination_class = CursorOrPages

    queryset = Operation.objects.select_related("triggered_by").only(*OperationSerializer.COLUMNS)
    filterset_class = OperationFilter

    def get_serializer_class(self) -> type[BaseSerializer]:
        return OperationSerializer if self.action == "list" else OperationDetailSerializer

    @extend_schema(request=None, responses=OperationDetailSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None) -> Response:
        """Stop the operation between steps. An experiment first stops its run and puts
        the host back: it stays active until then, and ends as cancelled."""
        operation = self.get_object()
        engine.cancel(operation, f"cancelled by {request.user.username}")
        operation.refresh_from_db()
        return Response(OperationDetailSerializer(operation).data)
