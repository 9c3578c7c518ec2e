"""Query-string filters of the audit log: by user, tenant, object and time."""

from datetime import UTC

import django_filters
from django import forms

from apps.api.filters import EnumFilter, GivenOrAbsent, IdFilter, given
from apps.audit.models import AuditEvent


class _MomentField(GivenOrAbsent, django_filters.fields.IsoDateTimeField):
    def to_python(self, value):
        # ISO 8601 allows offsets PostgreSQL does not (-18:02 is past its +-15:59): the
        # moment goes to the database in UTC, or is refused when UTC cannot hold it.
        moment = super().to_python(value)
        if moment is None or moment.tzinfo is None:
            return moment
        try:
            return moment.astimezone(UTC)
        except (OverflowError, ValueError):
            raise forms.ValidationError("a moment from year 1 to 9999 (UTC)") from None


class MomentFilter(django_filters.IsoDateTimeFilter):
    """An ISO 8601 moment; `?since=` with no value is refused, as its schema says."""

    field_class = _MomentField


class AuditFilter(django_filters.FilterSet):
    user = IdFilter(help_text="only what this user (or its tokens) did")
    username = django_filters.CharFilter(max_length=150, help_text="exactly this user name")
    tenant = IdFilter(help_text="only this tenant's part")
    object_type = django_filters.CharFilter(max_length=60,
                                            help_text="e.g. host, plan, snapshot, tenant")
    object_id = django_filters.CharFilter(max_length=40, help_text="with object_type")
    outcome = EnumFilter(choices=AuditEvent.Outcome.choices, help_text="only this outcome")
    since = MomentFilter(field_name="at", lookup_expr="gte",
                         help_text="at or after this moment (ISO 8601)")
    until = MomentFilter(field_name="at", lookup_expr="lt",
                         help_text="before this moment (ISO 8601)")

    class Meta:
        model = AuditEvent
        fields = ["user", "username", "tenant", "object_type", "object_id", "outcome",
                  "since", "until"]


LABELS = {"username": "User name", "tenant": "Tenant", "object_type": "Object type",
          "object_id": "Object id", "outcome": "Outcome", "since": "From", "until": "Until"}


class AuditPageFilter(AuditFilter):
    """The same filters as a GET form above /audit/: tenants and outcomes to choose from,
    times picked in the browser. Empty fields mean "any" (`given` drops them)."""

    def __init__(self, data=None, *args, tenants=(), **kwargs) -> None:
        super().__init__(given(data), *args, **kwargs)
        fields = self.form.fields
        fields["tenant"].widget = forms.Select(choices=[("", "any tenant"), *tenants])
        fields["outcome"].choices = [("", "any outcome"), *AuditEvent.Outcome.choices]
        fields["user"].widget = forms.HiddenInput()
        for name in ("since", "until"):
            fields[name].widget = forms.DateTimeInput(attrs={"type": "datetime-local"})
        for name, label in LABELS.items():  # not "At is greater than or equal to"
            fields[name].label = label
        for field in fields.values():
            field.help_text = ""
