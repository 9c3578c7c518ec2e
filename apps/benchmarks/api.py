from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from apps.benchmarks import services
from apps.benchmarks.models import Benchmark, Validation
from apps.benchmarks.serializers import (
    BenchmarkCreateSerializer,
    BenchmarkSerializer,
    ValidationCreateSerializer,
    ValidationSerializer,
)
from apps.ops.models import Operation


def _refused(exc: DjangoValidationError, nest_params: bool = False) -> ValidationError:
    """A service's ValidationError as the API's 400, field by field (parameters under params)."""
    fields = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
    errors: dict = {}
    for name, messages in fields.items():
        if nest_params and name in services.DEFAULTS:
            errors.setdefault("params", {})[name] = messages
        else:
            errors[name] = messages
    return ValidationError(errors)


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("host", int, description="only this host's benchmarks")]))
class BenchmarkViewSet(mixins.CreateModelMixin, mixins.ListModelMixin,
                       mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """pgbench runs: start one on a host's cluster, follow it, read its per-second series."""

    queryset = Benchmark.objects.select_related("operation", "host")
    serializer_class = BenchmarkSerializer

    def get_queryset(self):
        queryset = super().get_queryset()
        if host := self.request.query_params.get("host"):
            queryset = queryset.filter(host=host)
        return queryset

    @extend_schema(request=BenchmarkCreateSerializer, responses={201: BenchmarkSerializer})
    def create(self, request, *args, **kwargs):
        body = BenchmarkCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            bench = services.run_benchmark(
                data["host"], data.get("cluster"), dict(data.get("params") or {}),
                by=request.user, trigger=Operation.Trigger.API,
                profile_version_label=data.get("profile_version_label", ""))
        except DjangoValidationError as exc:
            raise _refused(exc, nest_params=True) from None
        return Response(BenchmarkSerializer(bench).data, status=status.HTTP_201_CREATED)


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("host", int, description="only this host's validations")]))
class ValidationViewSet(mixins.CreateModelMixin, mixins.ListModelMixin,
                        mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Before/after comparisons of two benchmarks on one host, with their ratios."""

    queryset = Validation.objects.select_related(
        "host", "before__operation", "after__operation")
    serializer_class = ValidationSerializer

    def get_queryset(self):
        queryset = super().get_queryset()
        if host := self.request.query_params.get("host"):
            queryset = queryset.filter(host=host)
        return queryset

    @extend_schema(request=ValidationCreateSerializer, responses={201: ValidationSerializer})
    def create(self, request, *args, **kwargs):
        body = ValidationCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            validation = services.validate(data["before"], data["after"], data.get("label", ""))
        except DjangoValidationError as exc:
            raise _refused(exc) from None
        return Response(ValidationSerializer(validation).data, status=status.HTTP_201_CREATED)
