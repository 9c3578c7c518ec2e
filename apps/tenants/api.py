from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from apps.accounts.roles import IsOperator, is_operator
from apps.tenants import services
from apps.tenants.filters import ClusterAssignmentFilter, MembershipFilter
from apps.tenants.models import ClusterAssignment, Membership, Tenant
from apps.tenants.serializers import (
    ClusterAssignmentSerializer,
    MembershipCreateSerializer,
    MembershipSerializer,
    TenantSerializer,
)


class OperatorWrites(IsAuthenticated):
    """Members read what is theirs (the queryset scopes it); only operators change it."""

    message = IsOperator.message

    def has_permission(self, request, view) -> bool:
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return super().has_permission(request, view)
        return is_operator(request.user)


class TenantViewSet(viewsets.ModelViewSet):
    """Tenants: operators create, rename and delete them; a member reads its own."""

    queryset = Tenant.objects.none()  # typed ids in the schema; get_queryset scopes
    serializer_class = TenantSerializer
    permission_classes = [OperatorWrites]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet:
        return services.visible_tenants(self.request.user)

    def perform_create(self, serializer) -> None:
        serializer.instance = services.create_tenant(serializer.validated_data["name"])

    def perform_update(self, serializer) -> None:
        data = serializer.validated_data
        tenant = serializer.instance
        if "name" in data:
            tenant = services.rename_tenant(tenant, data["name"])
        quotas = {field: data[field] for field in services.QUOTA_FIELDS if field in data}
        serializer.instance = services.set_quotas(tenant, **quotas) if quotas else tenant

    def perform_destroy(self, instance) -> None:
        services.delete_tenant(instance)


class MembershipViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                        mixins.UpdateModelMixin, mixins.DestroyModelMixin,
                        viewsets.GenericViewSet):
    """Who belongs to which tenant, with which role. Operators manage every tenant's
    members, a tenant admin its own tenant's (new accounts only); members read them."""

    queryset = Membership.objects.none()
    serializer_class = MembershipSerializer
    filterset_class = MembershipFilter
    permission_classes = [IsAuthenticated]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet:
        user = self.request.user
        writing = self.request.method not in ("GET", "HEAD", "OPTIONS")
        tenants = services.managed_tenants(user) if writing else services.visible_tenants(user)
        return Membership.objects.select_related("user").filter(tenant__in=tenants)

    @extend_schema(request=MembershipCreateSerializer, responses={201: MembershipSerializer})
    def create(self, request) -> Response:
        body = MembershipCreateSerializer(data=request.data)
        # Another tenant's id is "does not exist", as everywhere else.
        body.fields["tenant"].queryset = services.visible_tenants(request.user)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if not services.managed_tenants(request.user).filter(pk=data["tenant"].pk).exists():
            raise PermissionDenied("Only operators and the tenant's admins add members.")
        membership = services.add_member(data["tenant"], data["username"], data["role"],
                                         data["password"], by=request.user)
        return Response(MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)

    def perform_update(self, serializer) -> None:
        role = serializer.validated_data.get("role", serializer.instance.role)
        serializer.instance = services.set_role(serializer.instance, role)

    def perform_destroy(self, instance) -> None:
        services.remove_member(instance)


class ClusterAssignmentViewSet(mixins.CreateModelMixin, mixins.ListModelMixin,
                               mixins.RetrieveModelMixin, mixins.DestroyModelMixin,
                               viewsets.GenericViewSet):
    """Which tenant each PostgreSQL cluster belongs to (by host and data directory).
    Operators assign them; a tenant's members read their own (each one's snapshots:
    /api/cluster-assignments/{id}/snapshots/, apps.clones)."""

    queryset = ClusterAssignment.objects.none()  # typed ids in the schema; scoped below
    serializer_class = ClusterAssignmentSerializer
    filterset_class = ClusterAssignmentFilter
    permission_classes = [OperatorWrites]

    def get_queryset(self) -> QuerySet:
        return services.visible_assignments(self.request.user)

    def filter_queryset(self, queryset) -> QuerySet:
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    def perform_create(self, serializer) -> None:
        data = serializer.validated_data
        serializer.instance = services.assign_cluster(data["tenant"], data["host"],
                                                      data["cluster_data_dir"])

    def perform_destroy(self, instance) -> None:
        services.unassign_cluster(instance)

