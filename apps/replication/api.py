"""The links API: list, make, change, delete, run now, pause and resume, and the
rollback opt-in. Each view reads its input and calls one service; a refusal is a
LinkError or Conflict mapped to the API's error shape in apps.api.errors."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.api.idempotency import IdempotentPosts
from apps.ops.models import Operation
from apps.ops.serializers import OperationSerializer
from apps.replication import queries, services
from apps.replication.filters import LinkFilter
from apps.replication.models import ReplicationLink
from apps.replication.serializers import (
    LinkCreateSerializer,
    ReplicationLinkSerializer,
    SettingsSerializer,
    StreamSerializer,
)

# What makes a link the link it is: a change is passed on for the service to refuse
# with its reason, rather than silently dropped as an unknown field would be.
IDENTITY = ("name", "source_host", "target_host", "target_parent", "cluster_data_dir",
            "dataset", "sources")


def _accepted(operation: Operation) -> Response:
    return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)


class ReplicationLinkViewSet(IdempotentPosts, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                             viewsets.GenericViewSet):
    """Replication links: a cluster or dataset of one host copied by zfs send/recv under
    a target parent on another. Making one changes nothing on the hosts; each run is an
    operation on the source host."""

    serializer_class = ReplicationLinkSerializer
    filterset_class = LinkFilter

    def get_queryset(self) -> QuerySet:
        return queries.for_table()

    def filter_queryset(self, queryset) -> QuerySet:
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    def _shown(self, link: ReplicationLink, code: int = status.HTTP_200_OK) -> Response:
        return Response(self.get_serializer(queries.for_table().get(pk=link.pk)).data,
                        status=code)

    @extend_schema(request=LinkCreateSerializer,
                   responses={201: ReplicationLinkSerializer})
    def create(self, request) -> Response:
        body = LinkCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        link = services.create_link(**body.validated_data, by=request.user)
        return self._shown(link, status.HTTP_201_CREATED)

    @extend_schema(request=SettingsSerializer, responses={200: ReplicationLinkSerializer})
    def partial_update(self, request, pk=None) -> Response:
        """Change the settings; the name, the hosts, the source and the target parent
        cannot change (make a new link)."""
        link = self.get_object()
        if isinstance(request.data, dict) and (fixed := {
                key: request.data[key] for key in IDENTITY if key in request.data}):
            services.update_link(link, fixed, by=request.user)  # refuses, saying why
        body = SettingsSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        return self._shown(services.update_link(link, body.validated_data, by=request.user))

    @extend_schema(responses={202: OperationSerializer})
    def destroy(self, request, pk=None) -> Response:
        """Forget the link and start removing its key and holds from both hosts (the
        operation returned). What it received stays on the target."""
        return _accepted(services.delete_link(self.get_object(), by=request.user,
                                              trigger=Operation.Trigger.API))

    @extend_schema(request=None, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def run(self, request, pk=None) -> Response:
        """Start one run now (also while paused); 409 while one runs."""
        return _accepted(services.run_now(self.get_object(), by=request.user,
                                          trigger=Operation.Trigger.API))

    @extend_schema(responses={200: StreamSerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def streams(self, request, pk=None) -> Response:
        """The stream flags each source dataset is sent with (-w, -c, -L) and why: both
        hosts' capabilities, the dataset's encryption as the last run read it, the link's
        opt-outs. Each run decides again from the hosts and logs it. 409 until discovery
        has read both hosts."""
        found = services.streams_of(self.get_object())
        return Response([StreamSerializer.of(source, stream) for source, stream in found])

    @extend_schema(request=None, responses={200: ReplicationLinkSerializer})
    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None) -> Response:
        """Stop scheduled runs; a run in progress finishes."""
        return self._shown(services.pause(self.get_object(), by=request.user))

    @extend_schema(request=None, responses={200: ReplicationLinkSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None) -> Response:
        return self._shown(services.resume(self.get_object(), by=request.user))

    @extend_schema(request=None, responses={200: ReplicationLinkSerializer})
    @action(detail=True, methods=["post", "delete"], url_path="rollback-opt-in")
    def rollback_opt_in(self, request, pk=None) -> Response:
        """POST: allow runs to roll a diverged target back to the common snapshot,
        destroying what diverged there (who and when are recorded). DELETE: withdraw it."""
        link = self.get_object()
        if request.method == "DELETE":
            return self._shown(services.opt_out_rollback(link, by=request.user))
        return self._shown(services.opt_in_rollback(link, by=request.user))
