"""The WAL archives API (operators): list and show archives, enable one (a plan with
dry_run), disable one, refresh its command, check one now. Each view reads its input
and calls one service."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.api.idempotency import IdempotentPosts
from apps.ops.models import Operation
from apps.ops.serializers import OperationSerializer
from apps.wal import services
from apps.wal.models import WalArchive
from apps.wal.serializers import (
    NewRestorePointSerializer,
    WalArchiveSerializer,
    WalDisableSerializer,
    WalEnabledSerializer,
    WalEnableSerializer,
    WalPlanSerializer,
)


class WalArchiveViewSet(IdempotentPosts, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                        viewsets.GenericViewSet):
    """WAL archiving PoZoL owns, per cluster: its archive dataset, what the archiver did,
    the gaps and the window of moments a clone can be made for."""

    queryset = WalArchive.objects.select_related("cluster").prefetch_related(
        "restore_points").order_by("pk")
    serializer_class = WalArchiveSerializer

    @extend_schema(request=WalEnableSerializer,
                   responses={200: WalPlanSerializer, 202: WalEnabledSerializer})
    def create(self, request) -> Response:
        """Archive a cluster's WAL: with dry_run, the plan (settings before and after, a
        restart or a reload); else the operation that carries it out (202)."""
        body = WalEnableSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if data["dry_run"]:
            plan = services.plan_enable(data["cluster"], data["archive_timeout"])
            return Response(WalPlanSerializer(plan.as_dict()).data)
        archive, operation = services.enable(data["cluster"], data["archive_timeout"],
                                             by=request.user, trigger=Operation.Trigger.API)
        return Response(WalEnabledSerializer({"archive": archive, "operation": operation.pk,
                                           "plan": operation.state["plan"]}).data,
                        status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=WalDisableSerializer,
                   responses={200: WalPlanSerializer, 202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def disable(self, request, pk=None) -> Response:
        """Stop archiving: the settings from before come back (the archive is kept); with
        dry_run, the plan."""
        body = WalDisableSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        archive = self.get_object()
        if body.validated_data["dry_run"]:
            return Response(WalPlanSerializer(services.plan_disable(archive).as_dict()).data)
        operation = services.disable(archive, by=request.user, trigger=Operation.Trigger.API)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=NewRestorePointSerializer, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"], url_path="restore-points")
    def restore_points(self, request, pk=None) -> Response:
        """Make a named restore point now: a clone can then be asked for it by name."""
        body = NewRestorePointSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        operation = services.create_restore_point(self.get_object(), body.validated_data["name"],
                                                  by=request.user,
                                                  trigger=Operation.Trigger.API)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"], url_path="refresh-command")
    def refresh_command(self, request, pk=None) -> Response:
        """Write PoZoL's current archive_command (a reload) where the last read found
        another: 409 while it is current, the archive is not on, or it is busy."""
        operation = services.refresh_command(self.get_object(), by=request.user,
                                             trigger=Operation.Trigger.API)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def check(self, request, pk=None) -> Response:
        """Read the archiver and the archive now, apply retention, record the window."""
        operation = services.check(self.get_object(), by=request.user,
                                   trigger=Operation.Trigger.API)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)
