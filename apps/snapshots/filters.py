"""Query-string filters and sort orders of the snapshots list."""

import django_filters

from apps.api.filters import EnumFilter, HostListFilter, TrueFalseFilter
from apps.snapshots.models import Snapshot

SORTS = ("created_at", "used", "referenced", "dataset", "name")


class SnapshotFilter(HostListFilter):
    dataset = django_filters.CharFilter(max_length=255, help_text="exactly this dataset")
    origin = EnumFilter(choices=Snapshot.Origin.choices,
                        help_text="made by PoZoL, by hand, or received")
    held = TrueFalseFilter(method="filter_held", help_text="only held (or not held) ones")
    policy = django_filters.CharFilter(field_name="policy_name", max_length=255,
                                       help_text="the pozol:policy property")
    ordering = django_filters.OrderingFilter(
        fields=SORTS, help_text="sort by a field; '-' first for descending "
                                "(default: newest first)")

    class Meta:
        model = Snapshot
        fields = ["host", "dataset", "origin", "held", "policy"]

    def filter_held(self, queryset, name, value):
        return queryset.filter(userrefs__gt=0) if value else queryset.filter(userrefs=0)
