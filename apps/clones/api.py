"""The clones API: list, make (the answer carries the password, once), show, reset,
destroy, for operators and (scoped to their tenant) members; and each host's clone
settings (operators). Each view reads its input and calls one service; a refusal
is a CloneRefused or Conflict mapped to the API's error shape in apps.api.errors."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.api.idempotency import IdempotentPosts
from apps.api.pagination import CursorOrPages
from apps.clones import services, tenancy
from apps.clones.filters import CloneFilter
from apps.clones.models import Clone
from apps.clones.serializers import (
    CloneCreatedSerializer,
    CloneCreateSerializer,
    CloneResetSerializer,
    CloneSerializer,
    CloneSettingsSerializer,
    ClusterSnapshotSerializer,
    TenantUsageSerializer,
)
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.ops.serializers import OperationSerializer
from apps.tenants import services as tenant_services
from apps.tenants.models import ClusterAssignment


class UsesClones(BasePermission):
    """Operators, and every tenant's members and admins (the queryset scopes them)."""

    message = "Clones are for operators and the members of a tenant."

    def has_permission(self, request, view) -> bool:
        return tenancy.may_use_clones(request.user)


class CloneViewSet(IdempotentPosts, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                   viewsets.GenericViewSet):
    """Clones: a writable copy of a PostgreSQL cluster made from one of its snapshots on
    the same host, on a port of its own. Making, resetting and destroying one are
    operations. A tenant's member sees and makes its tenant's clones only (another
    tenant's is not found), within the tenant's quotas."""

    pagination_class = CursorOrPages

    queryset = Clone.objects.none()  # typed ids in the schema; get_queryset scopes
    serializer_class = CloneSerializer
    filterset_class = CloneFilter
    permission_classes = [UsesClones]

    def get_queryset(self) -> QuerySet:
        return tenancy.visible_clones(self.request.user)

    def filter_queryset(self, queryset) -> QuerySet:
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    @extend_schema(request=CloneCreateSerializer, responses={202: CloneCreatedSerializer})
    def create(self, request) -> Response:
        """Start making a clone. The answer holds the clone, its operation and the clone
        role's password: the only time the password is ever shown."""
        body = CloneCreateSerializer(data=request.data, user=request.user)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        link = data.get("link")
        clone, operation, password = services.create_clone(
            data.get("host") or (link.target_host if link else data["cluster"].host),
            data["cluster"], link=link,
            snapshot=data.get("snapshot"), name=data["name"],
            ttl=services.minutes(data["ttl_minutes"]),
            protected_for=services.minutes(data["protected_minutes"]),
            role=data["role"], by=request.user, trigger=Operation.Trigger.API,
            at=data.get("at"), lsn=data.get("lsn"), restore_point=data.get("restore_point"))
        shown = tenancy.visible_clones(request.user).get(pk=clone.pk)
        answer = CloneCreatedSerializer({"clone": shown, "operation": operation,
                                         "password": password}).data
        return Response(answer, status=status.HTTP_202_ACCEPTED,
                        headers={"Cache-Control": "no-store"})

    @extend_schema(responses={202: OperationSerializer})
    def destroy(self, request, pk=None) -> Response:
        """Stop the clone's PostgreSQL and destroy its datasets (the operation returned);
        409 while it is protected or busy."""
        operation = services.destroy_clone(self.get_object(), by=request.user,
                                           trigger=Operation.Trigger.API)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: TenantUsageSerializer(many=True)})
    @action(detail=False, methods=["get"], pagination_class=None, filter_backends=[])
    def usage(self, request) -> Response:
        """What each tenant's clones take of its quotas: yours, or every tenant's for an
        operator."""
        tenants = tenant_services.visible_tenants(request.user)
        return Response(TenantUsageSerializer(
            [tenancy.usage_row(tenant) for tenant in tenants[:1000]], many=True).data)

    @extend_schema(request=CloneResetSerializer, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def reset(self, request, pk=None) -> Response:
        """Make the clone again from a snapshot (or a fresh one), keeping its name, port,
        role and password; 409 unless it is ready or failed."""
        body = CloneResetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        operation = services.reset_clone(self.get_object(),
                                         snapshot=body.validated_data.get("snapshot"),
                                         by=request.user, trigger=Operation.Trigger.API)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)


class HostCloneSettingsView(APIView):
    """What an operator allows clones on one host: the port range they take ports from,
    the address they listen on, and the networks their role may connect from."""

    @extend_schema(responses=CloneSettingsSerializer)
    def get(self, request, pk: int) -> Response:
        host = get_object_or_404(Host.objects.only("pk"), pk=pk)
        return Response(CloneSettingsSerializer(services.settings_of(host)).data)

    @extend_schema(request=CloneSettingsSerializer, responses=CloneSettingsSerializer)
    def put(self, request, pk: int) -> Response:
        host = get_object_or_404(Host, pk=pk)
        body = CloneSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        limits = services.update_settings(host, **body.validated_data, by=request.user)
        return Response(CloneSettingsSerializer(limits).data)


class ClusterSnapshotsView(generics.GenericAPIView):
    """The snapshots of one of your clusters (its data dataset's), newest first, as the
    host's last listing found them: what a clone is made from. Another tenant's cluster
    is not found (generic, so OPTIONS looks it up too: apps.api.metadata)."""

    permission_classes = [UsesClones]
    queryset = ClusterAssignment.objects.none()  # typed ids in the schema; scoped below
    serializer_class = ClusterSnapshotSerializer
    filter_backends = []
    pagination_class = None

    def get_queryset(self) -> QuerySet:
        return tenancy.visible_assignments(self.request.user)

    @extend_schema(responses={200: ClusterSnapshotSerializer(many=True)})
    def get(self, request, pk: int) -> Response:
        assignment = self.get_object()
        rows = tenancy.snapshots_of(tenancy.cluster_of(assignment))[:500]
        return Response(ClusterSnapshotSerializer(rows, many=True).data)
