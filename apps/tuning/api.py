from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.ops.serializers import OperationSerializer
from apps.tuning import services
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


def refused(exc: services.TuningError):
    return ValidationError({"detail": [str(exc)]})


class ProfileViewSet(viewsets.ModelViewSet):
    """Tuning profiles. Editing adds a version; built-ins are copied, not edited."""

    queryset = Profile.objects.prefetch_related("versions")
    serializer_class = ProfileSerializer

    def create(self, request, *args, **kwargs):
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            profile = services.create_profile(name=data["name"], settings=data["settings"],
                                              description=data.get("description", ""),
                                              by=request.user)
        except services.TuningError as exc:
            raise refused(exc) from None
        return Response(self.get_serializer(profile).data, status=status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs):
        profile = self.get_object()
        settings = request.data.get("settings", profile.current.settings)
        try:
            services.edit_profile(profile, settings=settings, note=request.data.get("note", ""),
                                  description=request.data.get("description"), by=request.user)
        except services.TuningError as exc:
            raise refused(exc) from None
        return Response(self.get_serializer(self.get_object()).data)

    def destroy(self, request, *args, **kwargs):
        try:
            services.delete_profile(self.get_object())
        except services.TuningError as exc:
            raise refused(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses=ProfileVersionSerializer(many=True))
    @action(detail=True, methods=["get"])
    def versions(self, request, pk=None):
        rows = self.get_object().versions.all()
        return Response(ProfileVersionSerializer(rows, many=True).data)

    @extend_schema(request=ProfileCopySerializer, responses={201: ProfileSerializer})
    @action(detail=True, methods=["post"])
    def copy(self, request, pk=None):
        body = ProfileCopySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        copy = services.copy_profile(self.get_object(), name=body.validated_data["name"],
                                     by=request.user)
        return Response(self.get_serializer(copy).data, status=status.HTTP_201_CREATED)


class HostProfileView(APIView):
    """The profile a host follows, what it last got, and whether it drifted."""

    @extend_schema(responses=AssignmentSerializer)
    def get(self, request, pk: int):
        assignment = get_object_or_404(Assignment, host_id=pk)
        return Response(AssignmentSerializer(assignment).data)

    @extend_schema(request=AssignmentSerializer, responses=AssignmentSerializer)
    def put(self, request, pk: int):
        body = AssignmentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        assignment = services.assign(get_object_or_404(Host, pk=pk),
                                     body.validated_data["profile"], by=request.user)
        return Response(AssignmentSerializer(assignment).data)


class HostFindingsView(APIView):
    """The advisor's findings for a host, from its last discovery."""

    @extend_schema(responses=FindingSerializer(many=True))
    def get(self, request, pk: int):
        return Response(services.findings(get_object_or_404(Host, pk=pk)))


class HostPlanView(APIView):
    """A dry-run plan for the host's assigned profile, or the one named."""

    @extend_schema(request=PlanRequestSerializer, responses={201: PlanSerializer})
    def post(self, request, pk: int):
        body = PlanRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        version = body.validated_data.get("profile_version")
        if version is None and (profile := body.validated_data.get("profile")):
            version = profile.current
        try:
            plan = services.make_plan(get_object_or_404(Host, pk=pk), version=version,
                                      by=request.user)
        except services.TuningError as exc:
            raise refused(exc) from None
        return Response(PlanSerializer(plan).data, status=status.HTTP_201_CREATED)


class PlanViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Stored plans: apply one (an Operation), or roll an applied one back."""

    queryset = Plan.objects.select_related("profile_version__profile", "operation") \
        .prefetch_related("changes")
    serializer_class = PlanSerializer

    @extend_schema(parameters=[OpenApiParameter("host", int)])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def get_queryset(self):
        queryset = super().get_queryset()
        if host := self.request.query_params.get("host"):
            queryset = queryset.filter(host_id=host)
        return queryset

    @extend_schema(request=ApplyRequestSerializer, responses={202: OperationSerializer})
    @action(detail=True, methods=["post"])
    def apply(self, request, pk=None):
        body = ApplyRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            operation = services.apply_plan(self.get_object(), by=request.user,
                                            trigger=Operation.Trigger.API,
                                            **body.validated_data)
        except services.TuningError as exc:
            raise refused(exc) from None
        return Response(OperationSerializer(operation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=RollbackRequestSerializer, responses={202: RollbackResponseSerializer})
    @action(detail=True, methods=["post"])
    def rollback(self, request, pk=None):
        body = RollbackRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            plan, operation = services.rollback(self.get_object(), by=request.user,
                                                trigger=Operation.Trigger.API,
                                                **body.validated_data)
        except services.TuningError as exc:
            raise refused(exc) from None
        return Response({"plan": PlanSerializer(plan).data,
                         "operation": OperationSerializer(operation).data},
                        status=status.HTTP_202_ACCEPTED)
