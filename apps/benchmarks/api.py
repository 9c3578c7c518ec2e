from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response

from apps.api.idempotency import IdempotentPosts
from apps.benchmarks import services
from apps.benchmarks.filters import BenchmarkFilter, ValidationFilter
from apps.benchmarks.models import Benchmark, Validation
from apps.benchmarks.serializers import (
    BenchmarkCreateSerializer,
    BenchmarkSerializer,
    ValidationCreateSerializer,
    ValidationSerializer,
)
from apps.ops.models import Operation


class BenchmarkViewSet(IdempotentPosts, mixins.CreateModelMixin, mixins.ListModelMixin,
                       mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """pgbench runs: start one on a host's cluster, follow it, read its per-second series."""

    # The host is shown by its id (no join, so no facts read); the nested operation
    # shows who triggered it.
    queryset = Benchmark.objects.select_related("operation__triggered_by") \
        .defer("operation__state")
    serializer_class = BenchmarkSerializer
    filterset_class = BenchmarkFilter

    @extend_schema(request=BenchmarkCreateSerializer, responses={201: BenchmarkSerializer})
    def create(self, request, *args, **kwargs) -> Response:
        body = BenchmarkCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        bench = services.run_benchmark(
            data["host"], data.get("cluster"), dict(data.get("params") or {}),
            by=request.user, trigger=Operation.Trigger.API,
            profile_version_label=data.get("profile_version_label", ""))
        return Response(BenchmarkSerializer(bench).data, status=status.HTTP_201_CREATED)


class ValidationViewSet(mixins.CreateModelMixin, mixins.ListModelMixin,
                        mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Before/after comparisons of two benchmarks on one host, with their ratios."""

    queryset = Validation.objects.select_related(
        "before__operation__triggered_by", "after__operation__triggered_by") \
        .defer("before__operation__state", "after__operation__state")
    serializer_class = ValidationSerializer
    filterset_class = ValidationFilter

    @extend_schema(request=ValidationCreateSerializer, responses={201: ValidationSerializer})
    def create(self, request, *args, **kwargs) -> Response:
        body = ValidationCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        validation = services.validate(data["before"], data["after"], data.get("label", ""))
        return Response(ValidationSerializer(validation).data, status=status.HTTP_201_CREATED)
