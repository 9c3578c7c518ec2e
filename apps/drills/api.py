"""The restore drills API: schedules (list, create, change, delete, run now), runs (list,
show), the orphan reconciler of a host, and recovering a dropped table from a
snapshot or as of a moment. Each view calls one service; a refusal is
a DrillError or Conflict, mapped in apps.api.errors."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.api.idempotency import IdempotentPosts
from apps.drills import queries, services, table_recovery
from apps.drills import reconcile as reconciler
from apps.drills.models import DrillRun
from apps.drills.serializers import (
    DrillRunNowSerializer,
    DrillRunSerializer,
    DrillScheduleSerializer,
    DrillScheduleWriteSerializer,
    RecoverTableAtSerializer,
    RecoverTableSerializer,
)
from apps.fleet.models import Host, PgCluster
from apps.ops.models import Operation
from apps.ops.serializers import OperationSerializer
from apps.snapshots.models import Snapshot


class DrillRunFilter(django_filters.FilterSet):
    class Meta:
        model = DrillRun
        fields = ["host", "schedule", "status"]


class DrillScheduleViewSet(IdempotentPosts, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                           mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Restore drill schedules: per cluster (or per replication link, drilled on its
    target), every `interval_hours`, with an optional check query."""

    serializer_class = DrillScheduleSerializer

    def get_queryset(self) -> QuerySet:
        return queries.schedules()

    @extend_schema(request=DrillScheduleWriteSerializer, responses={201: DrillScheduleSerializer})
    def create(self, request) -> Response:
        data = self._body(request)
        schedule = services.save_schedule(
            host=data.get("host"), cluster=data.get("cluster"), link=data.get("link"),
            interval_hours=data["interval_hours"], check_query=data["check_query"],
            enabled=data["enabled"], target=data["target"], by=request.user)
        return Response(DrillScheduleSerializer(schedule).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=DrillScheduleWriteSerializer, responses=DrillScheduleSerializer)
    def update(self, request, pk=None) -> Response:
        """Change the interval, the check query, the target or `enabled` (not what it
        drills)."""
        data = self._body(request)
        schedule = services.save_schedule(
            schedule=self.get_object(), interval_hours=data["interval_hours"],
            check_query=data["check_query"], enabled=data["enabled"], target=data["target"],
            by=request.user)
        return Response(DrillScheduleSerializer(schedule).data)

    def perform_destroy(self, instance) -> None:
        services.delete_schedule(instance)

    @extend_schema(request=DrillRunNowSerializer, responses={202: DrillRunSerializer})
    @action(detail=True, methods=["post"])
    def run(self, request, pk=None) -> Response:
        """Start a drill now; 409 while one runs. A drill with nothing to clone is
        answered at once, failed, with its reason. With `at`, the drill replays to that
        moment (on a link's target, with the WAL archive the link carried); a moment
        outside the window is a 400 with the window."""
        body = DrillRunNowSerializer(data=request.data or {})
        body.is_valid(raise_exception=True)
        run = services.run_now(self.get_object(), by=request.user,
                               trigger=Operation.Trigger.API,
                               at=body.validated_data.get("at"))
        return Response(DrillRunSerializer(queries.runs().get(pk=run.pk)).data,
                        status=status.HTTP_202_ACCEPTED)

    @staticmethod
    def _body(request) -> dict:
        body = DrillScheduleWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return body.validated_data


class DrillRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                      viewsets.GenericViewSet):
    """Restore drill runs, newest first: pass or fail, the seconds each part took, the
    check's answer per database, and on failure PostgreSQL's log tail."""

    serializer_class = DrillRunSerializer
    filterset_class = DrillRunFilter

    def get_queryset(self) -> QuerySet:
        return queries.runs()


class HostReconcileView(IdempotentPosts, APIView):
    """Look for orphan clones on a host (datasets and postmasters PoZoL has no record
    of) and remove those past the grace period: the operation returned says which."""

    @extend_schema(request=None, responses={202: OperationSerializer})
    def post(self, request, pk: int) -> Response:
        host = get_object_or_404(Host, pk=pk)
        operation = reconciler.reconcile(host, by=request.user)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)


class SnapshotRecoverTableView(IdempotentPosts, APIView):
    """Recover a dropped table (POST /api/snapshots/{id}/recover-table/): clone the
    snapshot, start it, copy `table` back into the origin database as `into` in one
    transaction, destroy the clone. The operation fails with code `exists` (nothing
    cloned) when `into` is there already; its result says how many rows came back."""

    @extend_schema(request=RecoverTableSerializer, responses={202: OperationSerializer})
    def post(self, request, pk: int) -> Response:
        snapshot = get_object_or_404(Snapshot, pk=pk)
        body = RecoverTableSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        operation = table_recovery.recover_table(snapshot, database=data["database"],
                                                 table=data["table"], into=data.get("into"),
                                                 by=request.user,
                                                 trigger=Operation.Trigger.API)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)


class ClusterRecoverTableView(IdempotentPosts, APIView):
    """Recover a dropped table as of a moment (POST /api/clusters/{id}/recover-table/):
    `at`, `lsn` or `restore_point` instead of a snapshot. The newest snapshot before the
    moment is cloned and replayed forward with the cluster's archived WAL, then the table
    is copied back as from a snapshot; the operation's result has `reached_at`, the last
    transaction the replay applied."""

    @extend_schema(request=RecoverTableAtSerializer, responses={202: OperationSerializer})
    def post(self, request, pk: int) -> Response:
        cluster = get_object_or_404(PgCluster.objects.select_related("host"), pk=pk)
        body = RecoverTableAtSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        operation = table_recovery.recover_table_at(
            cluster, database=data["database"], table=data["table"], into=data.get("into"),
            at=data.get("at"), lsn=data.get("lsn"), restore_point=data.get("restore_point"),
            by=request.user, trigger=Operation.Trigger.API)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)
