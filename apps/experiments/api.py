from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.api.idempotency import IdempotentPosts
from apps.experiments import services
from apps.experiments.models import Experiment, Script
from apps.experiments.serializers import (
    ExperimentCreateSerializer,
    ExperimentSerializer,
    ScriptCreateSerializer,
    ScriptSerializer,
    ScriptVersionCreateSerializer,
    ScriptVersionSerializer,
    TemplateSerializer,
)
from apps.ops.models import Operation


class ExperimentViewSet(IdempotentPosts, mixins.CreateModelMixin, mixins.ListModelMixin,
                        mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Experiments: one setting varied across values on a host, runs alternating, results
    with their spread and a verdict; the host is restored at the end."""

    queryset = Experiment.objects.select_related(
        "operation__triggered_by", "script_version__script"
    ).prefetch_related("runs").defer("operation__state")
    serializer_class = ExperimentSerializer

    @extend_schema(request=ExperimentCreateSerializer, responses={201: ExperimentSerializer})
    def create(self, request, *args, **kwargs) -> Response:
        body = ExperimentCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        host, cluster = data.pop("host"), data.pop("cluster", None)
        exp = services.create_experiment(host, cluster, data, by=request.user,
                                         trigger=Operation.Trigger.API)
        return Response(ExperimentSerializer(exp).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: TemplateSerializer(many=True)})
    @action(detail=False, methods=["get"], pagination_class=None, filter_backends=[])
    def templates(self, request) -> Response:
        """The built-in templates, each with the published figure it reproduces."""
        return Response(TemplateSerializer(services.templates(), many=True).data)


class ScriptViewSet(mixins.CreateModelMixin, mixins.ListModelMixin,
                    mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Custom pgbench scripts (-f), versioned: an edit adds a version."""

    queryset = Script.objects.prefetch_related("versions")
    serializer_class = ScriptSerializer

    def list(self, request, *args, **kwargs) -> Response:
        services.ensure_builtin_scripts()
        return super().list(request, *args, **kwargs)

    @extend_schema(request=ScriptCreateSerializer, responses={201: ScriptSerializer})
    def create(self, request, *args, **kwargs) -> Response:
        body = ScriptCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        script = services.create_script(by=request.user, **body.validated_data)
        return Response(ScriptSerializer(script).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=ScriptVersionCreateSerializer,
                   responses={201: ScriptVersionSerializer})
    @action(detail=True, methods=["post"])
    def versions(self, request, pk=None) -> Response:
        body = ScriptVersionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        version = services.add_script_version(self.get_object(), by=request.user,
                                              **body.validated_data)
        return Response(ScriptVersionSerializer(version).data, status=status.HTTP_201_CREATED)
