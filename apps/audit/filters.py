"""Query-string filters of the audit log: by user, tenant, object and time."""

import django_filters

from apps.audit.models import AuditEvent
from apps.ops.filters import EnumFilter, IdFilter


class AuditFilter(django_filters.FilterSet):
    user = IdFilter(help_text="only what this user (or its tokens) did")
    username = django_filters.CharFilter(max_length=150, help_text="exactly this user name")
    tenant = IdFilter(help_text="only this tenant's part")
    object_type = django_filters.CharFilter(max_length=60,
                                            help_text="e.g. host, plan, snapshot, tenant")
    object_id = django_filters.CharFilter(max_length=40, help_text="with object_type")
    outcome = EnumFilter(choices=AuditEvent.Outcome.choices, help_text="only this outcome")
    since = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="gte",
                                             help_text="at or after this moment (ISO 8601)")
    until = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="lt",
                                             help_text="before this moment (ISO 8601)")

    class Meta:
        model = AuditEvent
        fields = ["user", "username", "tenant", "object_type", "object_id", "outcome",
                  "since", "until"]
