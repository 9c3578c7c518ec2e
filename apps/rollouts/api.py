from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.api.idempotency import IdempotentPosts
from apps.ops.models import Operation
from apps.rollouts import queries, services
from apps.rollouts.serializers import RolloutCreateSerializer, RolloutSerializer


class RolloutViewSet(IdempotentPosts, mixins.CreateModelMixin, mixins.ListModelMixin,
                     mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Rollouts: one profile version applied to many hosts in waves (a canary first),
    each host validated; a failure stops it and rolls the failing wave back (and the
    earlier ones when asked at the start). `pause/` lets what runs end and starts
    nothing new; `resume/` goes on."""

    queryset = queries.rollouts()
    serializer_class = RolloutSerializer

    @extend_schema(request=RolloutCreateSerializer, responses={201: RolloutSerializer})
    def create(self, request, *args, **kwargs) -> Response:
        body = RolloutCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        version = services.version_of(data.pop("profile"), data.pop("version", None))
        rollout = services.start_rollout(version, data.pop("hosts"), **data,
                                         trigger=Operation.Trigger.API, by=request.user)
        return Response(RolloutSerializer(queries.rollouts().get(pk=rollout.pk)).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: RolloutSerializer})
    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None) -> Response:
        services.pause(self.get_object())
        return Response(RolloutSerializer(self.get_queryset().get(pk=pk)).data)

    @extend_schema(request=None, responses={200: RolloutSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None) -> Response:
        services.resume(self.get_object())
        return Response(RolloutSerializer(self.get_queryset().get(pk=pk)).data)
