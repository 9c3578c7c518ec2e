"""Query-string filters of the profiles and plans lists."""

import django_filters

from apps.api.filters import HostListFilter, TrueFalseFilter
from apps.tuning.models import Plan, Profile


class PlanFilter(HostListFilter):
    class Meta:
        model = Plan
        fields = ["host"]


class ProfileFilter(django_filters.FilterSet):
    """Active profiles by default; `?archived=true` lists the archived ones instead."""

    archived = TrueFalseFilter(method="by_archived", help_text="true: only archived profiles")

    class Meta:
        model = Profile
        fields = ["archived"]

    def filter_queryset(self, queryset):
        if self.form.cleaned_data.get("archived") in (None, ""):
            queryset = queryset.filter(archived_at=None)
        return super().filter_queryset(queryset)

    def by_archived(self, queryset, name, value):
        return queryset.filter(archived_at__isnull=not value)
