from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from apps.api.idempotency import IdempotentPosts
from apps.api.pagination import CursorOrPages
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.ops.serializers import OperationSerializer
from apps.snapshots import policies, services
from apps.snapshots.filters import SnapshotFilter
from apps.snapshots.models import PolicyAssignment, Snapshot, SnapshotPolicy
from apps.snapshots.serializers import (
    PolicyAssignmentSerializer,
    PolicyPreviewResultSerializer,
    PolicyPreviewSerializer,
    SnapshotCreateSerializer,
    SnapshotPolicySerializer,
    SnapshotRollbackSerializer,
    SnapshotSerializer,
)

FORCE = OpenApiParameter(
    "force", OpenApiTypes.BOOL, description="Destroy a snapshot PoZoL did not make (by hand, "
    "or received). Held snapshots and snapshots with clones are refused whatever this says.")


def _accepted(operation: Operation) -> Response:
    return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)


class HostSnapshotsView(IdempotentPosts, generics.ListAPIView):
    """The snapshots of one host as its last listing found them (newest first), and
    "snapshot now" (POST): a cluster's data and WAL together, or one dataset."""

    pagination_class = CursorOrPages

    serializer_class = SnapshotSerializer
    filterset_class = SnapshotFilter

    def get_queryset(self) -> QuerySet:
        host = get_object_or_404(Host.objects.only("pk"), pk=self.kwargs["pk"])
        return Snapshot.objects.filter(host=host)

    @extend_schema(request=SnapshotCreateSerializer, responses={202: OperationSerializer})
    def post(self, request, pk: int) -> Response:
        host = get_object_or_404(Host, pk=pk)
        body = SnapshotCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        operation = services.snapshot_now(
            host, cluster=data.get("cluster"), dataset=data.get("dataset"),
            label=data["label"], hold=data["hold"], checkpoint=data["checkpoint"],
            by=request.user, trigger=Operation.Trigger.API)
        return _accepted(operation)


class SnapshotViewSet(IdempotentPosts, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                      mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Snapshots of every host; destroy (with guards), hold and release start operations."""

    pagination_class = CursorOrPages

    queryset = Snapshot.objects.all()
    serializer_class = SnapshotSerializer
    filterset_class = SnapshotFilter

    def filter_queryset(self, queryset) -> QuerySet:
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    @extend_schema(parameters=[FORCE], responses={202: OperationSerializer})
    def destroy(self, request, *args, **kwargs) -> Response:
        force = request.query_params.get("force", "false")
        if force not in ("true", "false"):
            raise ValidationError({"force": ["true or false"]})
        operation = services.destroy(self.get_object(), force=force == "true", by=request.user,
                                     trigger=Operation.Trigger.API)
        return _accepted(operation)

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def hold(self, request, pk=None) -> Response:
        return _accepted(services.hold(self.get_object(), by=request.user,
                                       trigger=Operation.Trigger.API))

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def release(self, request, pk=None) -> Response:
        return _accepted(services.release(self.get_object(), by=request.user,
                                          trigger=Operation.Trigger.API))


    @extend_schema(request=SnapshotRollbackSerializer, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def rollback(self, request, pk=None) -> Response:
        """Roll this snapshot's PostgreSQL cluster back to it: stopped, data and WAL rolled
        back together, started. 409 when newer snapshots are in the way (say destroy_newer)
        or one of them may not be destroyed."""
        body = SnapshotRollbackSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return _accepted(services.rollback(
            self.get_object(), destroy_newer=body.validated_data["destroy_newer"],
            by=request.user, trigger=Operation.Trigger.API))


class SnapshotPolicyViewSet(viewsets.ModelViewSet):
    """Snapshot policies (CRUD) and the prune preview of a proposed change."""

    queryset = SnapshotPolicy.objects.all()
    serializer_class = SnapshotPolicySerializer

    @extend_schema(request=PolicyPreviewSerializer,
                   responses={200: PolicyPreviewResultSerializer})
    @action(detail=True, methods=["post"])
    def preview(self, request, pk=None) -> Response:
        """Per assigned target, exactly which existing snapshots the proposed values
        would have the next prune destroy; nothing is saved."""
        body = PolicyPreviewSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        targets = policies.preview(self.get_object(), body.validated_data)
        return Response(PolicyPreviewResultSerializer({"targets": targets}).data)


class PolicyAssignmentViewSet(mixins.CreateModelMixin, mixins.ListModelMixin,
                              mixins.RetrieveModelMixin, mixins.DestroyModelMixin,
                              viewsets.GenericViewSet):
    """Which policy each target has: a cluster (data and WAL together) or a dataset."""

    queryset = PolicyAssignment.objects.select_related("policy", "host")
    serializer_class = PolicyAssignmentSerializer

    def perform_create(self, serializer) -> None:
        data = serializer.validated_data
        serializer.instance = policies.assign(
            data["policy"], data["host"], cluster_data_dir=data["cluster_data_dir"],
            dataset=data["dataset"])

    def perform_destroy(self, instance: PolicyAssignment) -> None:
        policies.unassign(instance)
