from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from apps.api.idempotency import IdempotentPosts
from apps.fleet import reserves, services
from apps.fleet.models import Host
from apps.fleet.serializers import (
    DatasetSerializer,
    DiskSerializer,
    FingerprintSerializer,
    HostCreatedSerializer,
    HostCreateSerializer,
    HostSerializer,
    HostUpdateSerializer,
    PoolReserveSerializer,
    PoolSerializer,
)
from apps.ops.models import Operation
from apps.ops.serializers import OperationSerializer


class HostViewSet(IdempotentPosts, viewsets.ModelViewSet):
    """Hosts: add (with a key and a host-key decision), inspect, discover, remove."""

    queryset = Host.objects.all()

    def get_queryset(self) -> QuerySet:
        hosts = super().get_queryset().with_open_alerts()
        if self.action in {"list", "retrieve"}:
            hosts = hosts.defer(*HostSerializer.UNSHOWN)
        return hosts

    def get_serializer_class(self) -> type[BaseSerializer]:
        return {"create": HostCreateSerializer, "update": HostUpdateSerializer,
                "partial_update": HostUpdateSerializer}.get(self.action, HostSerializer)

    @extend_schema(responses={201: HostCreatedSerializer})
    def create(self, request, *args, **kwargs) -> Response:
        serializer = HostCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        host, operation = services.add_host(**serializer.validated_data,
                                            trigger=Operation.Trigger.API, by=request.user)
        host.operation = operation
        return Response(HostCreatedSerializer(host).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=HostSerializer)
    def update(self, request, *args, **kwargs) -> Response:
        super().update(request, *args, **kwargs)
        return Response(HostSerializer(self.get_object()).data)

    def perform_destroy(self, instance: Host) -> None:
        services.remove_host(instance)

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def discover(self, request, pk=None) -> Response:
        operation = services.discover(self.get_object(), trigger=Operation.Trigger.API,
                                      by=request.user)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=FingerprintSerializer, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"], url_path="confirm-host-key")
    def confirm_host_key(self, request, pk=None) -> Response:
        body = FingerprintSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        with transaction.atomic():
            operation = services.confirm_host_key(
                self.get_object(), body.validated_data["fingerprint"], by=request.user,
                trigger=Operation.Trigger.API)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"], url_path="forget-host-key")
    def forget_host_key(self, request, pk=None) -> Response:
        """After a host was re-installed: fetch its new key for confirmation."""
        operation = services.accept_changed_host_key(self.get_object(), by=request.user,
                                                     trigger=Operation.Trigger.API)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, description=(
        "Everything the last discovery gathered on the host, as it gathered it (tens of "
        "kilobytes): kernel, memory, sysctls, ZFS module parameters, ARC statistics, pools, "
        "datasets with all their properties, disks and PostgreSQL clusters with every "
        "pg_settings row. The host list and detail leave it out."))
    @action(detail=True, methods=["get"])
    def facts(self, request, pk=None) -> Response:
        return Response(self.get_object().facts)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 409: OpenApiResponse(description=(
        "Not for this host yet: its host key is not pinned (`host_key_not_pinned`: the "
        "helper is made for that key), what it reported cannot be written in sudoers "
        "(`unnamable`), or its stored key cannot make the helper (`unusable_key`)."))},
        parameters=[OpenApiParameter(
        "login", str, description="another login than the host's own")], description=(
        "The sudoers file a non-root login needs on this host (install it as "
        "/etc/sudoers.d/pozol, mode 0440): each rule with what it grants; `helper`, the "
        "program its `run` rule names (install it at `helper_path`, root, mode 0755), which "
        "runs as root only scripts signed with this host's key. `check` is what the last "
        "discovery through that login found missing in `sudo -n -l`."))
    @action(detail=True, methods=["get"])
    def sudoers(self, request, pk=None) -> Response:
        return Response(services.sudoers(self.get_object(), request.query_params.get("login")))

    def _related(self, related_name: str, serializer_class: type[BaseSerializer]) -> Response:
        rows = getattr(self.get_object(), related_name).all()
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(serializer_class(page, many=True).data)

    @extend_schema(responses=DatasetSerializer(many=True))
    @action(detail=True, methods=["get"])
    def datasets(self, request, pk=None) -> Response:
        return self._related("datasets", DatasetSerializer)

    @extend_schema(responses=PoolSerializer(many=True))
    @action(detail=True, methods=["get"])
    def pools(self, request, pk=None) -> Response:
        return self._related("pools", PoolSerializer)

    @extend_schema(responses=DiskSerializer(many=True))
    @action(detail=True, methods=["get"])
    def disks(self, request, pk=None) -> Response:
        return self._related("disks", DiskSerializer)


class HostPoolReservesView(APIView):
    """The free space kept on each of a host's pools: clones, "now" snapshots,
    replication receives and experiments are refused when they would take a pool's
    free space below it. Kept by host and pool name, so rediscovery keeps it."""

    @extend_schema(responses=PoolReserveSerializer(many=True))
    def get(self, request, pk: int) -> Response:
        host = get_object_or_404(Host.objects.only("pk", "name"), pk=pk)
        return Response(PoolReserveSerializer(reserves.shown(host), many=True).data)


class HostPoolReserveView(APIView):
    """One pool's reserve: reserve_bytes, or reserve_percent of the pool, or neither for
    the default (10%)."""

    @extend_schema(responses=PoolReserveSerializer)
    def get(self, request, pk: int, pool: str) -> Response:
        host = get_object_or_404(Host.objects.only("pk", "name"), pk=pk)
        row = reserves.shown_one(host, pool)
        if row is None:
            raise Http404
        return Response(PoolReserveSerializer(row).data)

    @extend_schema(request=PoolReserveSerializer, responses=PoolReserveSerializer)
    def put(self, request, pk: int, pool: str) -> Response:
        host = get_object_or_404(Host.objects.only("pk", "name"), pk=pk)
        body = PoolReserveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        reserves.set_reserve(host, pool, **body.validated_data)
        return Response(PoolReserveSerializer(reserves.shown_one(host, pool)).data)
