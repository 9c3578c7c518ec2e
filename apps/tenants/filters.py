"""Query-string filters of the tenants' lists."""

import django_filters

from apps.api.filters import EnumFilter, IdFilter
from apps.tenants.models import ClusterAssignment, Membership


class MembershipFilter(django_filters.FilterSet):
    tenant = IdFilter(help_text="only this tenant's members")
    role = EnumFilter(choices=Membership.Role.choices, help_text="only this role")

    class Meta:
        model = Membership
        fields = ["tenant", "role"]


class ClusterAssignmentFilter(django_filters.FilterSet):
    tenant = IdFilter(help_text="only this tenant's clusters")
    host = IdFilter(help_text="only this host's clusters")

    class Meta:
        model = ClusterAssignment
        fields = ["tenant", "host"]
