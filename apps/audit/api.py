from django.db.models import QuerySet
from rest_framework import mixins, viewsets
from rest_framework.permissions import BasePermission

from apps.accounts.roles import is_operator
from apps.audit import services
from apps.audit.filters import AuditFilter
from apps.audit.models import AuditEvent
from apps.audit.serializers import AuditEventSerializer
from apps.tenants.models import Membership


class ReadsAudit(BasePermission):
    """Operators, and tenant admins (who read their tenant's part)."""

    message = "The audit log is for operators and tenant admins."

    def has_permission(self, request, view) -> bool:
        user = request.user
        return is_operator(user) or (user.is_authenticated and Membership.objects.filter(
            user=user, role=Membership.Role.TENANT_ADMIN).exists())

class AuditEventViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                        viewsets.GenericViewSet):
    """Every request that asked to change something, and every sign-in, newest first."""

    queryset = AuditEvent.objects.none()  # typed ids in the schema; get_queryset scopes
    serializer_class = AuditEventSerializer
    filterset_class = AuditFilter
    permission_classes = [ReadsAudit]

    def get_queryset(self) -> QuerySet:
        return services.visible_to(self.request.user)

    def filter_queryset(self, queryset) -> QuerySet:
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    def paginate_queryset(self, queryset) -> list | None:
        page = super().paginate_queryset(queryset)
        # One query for the operations the page's requests started.
        return services.with_operations(page) if page is not None else None
