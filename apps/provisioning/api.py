from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.api.idempotency import IdempotentPosts
from apps.fleet.models import Host
from apps.fleet.serializers import PgClusterSerializer
from apps.ops.models import Operation
from apps.ops.serializers import OperationSerializer
from apps.provisioning import services
from apps.provisioning.serializers import (
    ClusterCreatedSerializer,
    ClusterCreateSerializer,
    ClusterPlanSerializer,
    RetireClusterSerializer,
)


def _request(request: Request) -> dict:
    body = ClusterCreateSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    return dict(body.validated_data)


class HostClustersView(IdempotentPosts, generics.ListAPIView):
    """A host's PostgreSQL clusters as discovery found them; POST creates one (202: the
    plan and the Operation that carries it out; the cluster's id is its result)."""

    serializer_class = PgClusterSerializer

    def get_queryset(self) -> QuerySet:
        host = get_object_or_404(Host.objects.only("pk"), pk=self.kwargs["pk"])
        return host.clusters.all()

    @extend_schema(request=ClusterCreateSerializer, responses={202: ClusterCreatedSerializer})
    def post(self, request, pk: int) -> Response:
        host = get_object_or_404(Host, pk=pk)
        plan, operation = services.create_cluster(host, by=request.user,
                                                  trigger=Operation.Trigger.API,
                                                  **_request(request))
        return Response({"plan": ClusterPlanSerializer(plan.to_dict()).data,
                         "operation": OperationSerializer(operation).data},
                        status=status.HTTP_202_ACCEPTED)


class HostClusterPlanView(APIView):
    """What creating this cluster would do, and nothing else: its datasets and their
    properties, initdb, its settings and how it starts; or the reason it is refused."""

    @extend_schema(request=ClusterCreateSerializer, responses={200: ClusterPlanSerializer})
    def post(self, request, pk: int) -> Response:
        host = get_object_or_404(Host, pk=pk)
        plan = services.plan_cluster(host, **_request(request))
        return Response(ClusterPlanSerializer(plan.to_dict()).data)


class HostRetireClusterView(IdempotentPosts, APIView):
    """Retire a cluster. Alone (the default), it forgets a cluster that is gone for good
    (refused while it runs): 204. With stop, final_snapshot or datasets=destroy it is an
    Operation (202): stopped, snapshotted, its datasets destroyed, then forgotten;
    refused while clones, replication links or a tenant depend on it."""

    @extend_schema(request=RetireClusterSerializer, responses={202: OperationSerializer,
                                                               204: None})
    def post(self, request, pk: int) -> Response:
        host = get_object_or_404(Host, pk=pk)
        body = RetireClusterSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        operation = services.retire_cluster(
            host, data["cluster"], stop=data["stop"], datasets=data["datasets"],
            final_snapshot=data["final_snapshot"], by=request.user,
            trigger=Operation.Trigger.API)
        if operation is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)
