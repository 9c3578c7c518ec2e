from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.api.idempotency import IdempotentPosts
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.ops.serializers import OperationSerializer
from apps.tuning import services
from apps.tuning.filters import PlanFilter, ProfileFilter
from apps.tuning.models import Assignment, Plan, Profile
from apps.tuning.serializers import (
    ApplyRequestSerializer,
    AssignmentSerializer,
    FindingSerializer,
    PlanRequestSerializer,
    PlanSerializer,
    ProfileCopySerializer,
    ProfileSerializer,
    ProfileVersionSerializer,
    RollbackRequestSerializer,
    RollbackResponseSerializer,
)


class ProfileViewSet(viewsets.ModelViewSet):
    """Tuning profiles. Editing adds a version; built-ins are copied, not edited.
    Deleting a profile plans were made from archives it (`?archived=true` lists those)."""

    queryset = Profile.objects.prefetch_related("versions")
    serializer_class = ProfileSerializer
    filterset_class = ProfileFilter

    def filter_queryset(self, queryset) -> QuerySet:
        # Only the list hides archived profiles; one named by id is always found.
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    def create(self, request, *args, **kwargs) -> Response:
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        profile = services.create_profile(name=data["name"], settings=data["settings"],
                                          description=data.get("description", ""),
                                          by=request.user)
        return Response(self.get_serializer(profile).data, status=status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs) -> Response:
        partial = kwargs.get("partial", False)
        profile = self.get_object()
        body = self.get_serializer(profile, data=request.data, partial=partial)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if not partial and "settings" not in data:
            raise ValidationError({"settings": ["This field is required."]})
        services.edit_profile(profile, settings=data.get("settings"), note=data.get("note", ""),
                              name=data.get("name"), description=data.get("description"),
                              by=request.user)
        return Response(self.get_serializer(self.get_object()).data)

    def destroy(self, request, *args, **kwargs) -> Response:
        services.delete_profile(self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses=ProfileVersionSerializer(many=True))
    @action(detail=True, methods=["get"], filter_backends=[])
    def versions(self, request, pk=None) -> Response:
        page = self.paginate_queryset(self.get_object().versions.select_related("created_by"))
        return self.get_paginated_response(ProfileVersionSerializer(page, many=True).data)

    @extend_schema(request=ProfileCopySerializer, responses={201: ProfileSerializer})
    @action(detail=True, methods=["post"])
    def copy(self, request, pk=None) -> Response:
        body = ProfileCopySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        copy = services.copy_profile(self.get_object(), name=body.validated_data["name"],
                                     by=request.user)
        return Response(self.get_serializer(copy).data, status=status.HTTP_201_CREATED)


class HostProfileView(APIView):
    """The profile a host follows, what it last got, and whether it drifted; DELETE
    returns the host to "no profile" without touching the host."""

    @extend_schema(responses=AssignmentSerializer)
    def get(self, request, pk: int) -> Response:
        assignment = get_object_or_404(Assignment, host_id=pk)
        return Response(AssignmentSerializer(assignment).data)

    @extend_schema(request=AssignmentSerializer, responses=AssignmentSerializer)
    def put(self, request, pk: int) -> Response:
        body = AssignmentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        assignment = services.assign(get_object_or_404(Host, pk=pk),
                                     body.validated_data["profile"], by=request.user)
        return Response(AssignmentSerializer(assignment).data)

    @extend_schema(responses={204: None}, description=(
        'Return the host to "no profile". Nothing on the host changes: the values the '
        "profile's plans wrote stay (roll a plan back to restore them). Idempotent."))
    def delete(self, request, pk: int) -> Response:
        services.unassign(get_object_or_404(Host, pk=pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class HostFindingsView(APIView):
    """The advisor's findings for a host, from its last discovery."""

    @extend_schema(responses=FindingSerializer(many=True))
    def get(self, request, pk: int) -> Response:
        return Response(services.findings(get_object_or_404(Host, pk=pk)))


class HostPlanView(APIView):
    """A dry-run plan for the host's assigned profile, or the one named."""

    @extend_schema(request=PlanRequestSerializer, responses={201: PlanSerializer})
    def post(self, request, pk: int) -> Response:
        body = PlanRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        version = body.validated_data.get("profile_version")
        if version is None and (profile := body.validated_data.get("profile")):
            version = profile.current
        plan = services.make_plan(get_object_or_404(Host, pk=pk), version=version,
                                  by=request.user)
        return Response(PlanSerializer(plan).data, status=status.HTTP_201_CREATED)


class PlanViewSet(IdempotentPosts, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                  viewsets.GenericViewSet):
    """Stored plans: apply one (an Operation), or roll an applied one back."""

    queryset = Plan.objects.select_related("profile_version__profile",
                                           "operation__triggered_by") \
        .defer("operation__state").prefetch_related("changes")
    serializer_class = PlanSerializer
    filterset_class = PlanFilter

    @extend_schema(request=ApplyRequestSerializer, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def apply(self, request, pk=None) -> Response:
        body = ApplyRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        operation = services.apply_plan(self.get_object(), by=request.user,
                                        trigger=Operation.Trigger.API,
                                        **body.validated_data)
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=RollbackRequestSerializer, responses={202: RollbackResponseSerializer})
    @action(detail=True, methods=["post"])
    def rollback(self, request, pk=None) -> Response:
        body = RollbackRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        plan, operation = services.rollback(self.get_object(), by=request.user,
                                            trigger=Operation.Trigger.API,
                                            **body.validated_data)
        return Response({"plan": PlanSerializer(plan).data,
                         "operation": OperationSerializer(operation).data},
                        status=status.HTTP_202_ACCEPTED)
