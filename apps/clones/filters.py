"""Query-string filters of the clones list."""

import django_filters

from apps.api.filters import EnumFilter, HostListFilter
from apps.clones.models import Clone


class CloneFilter(HostListFilter):
    state = EnumFilter(choices=Clone.State.choices, help_text="where the clone's life is")
    cluster_data_dir = django_filters.CharFilter(
        max_length=1024, help_text="only clones of the cluster with this data directory")

    class Meta:
        model = Clone
        fields = ["host", "state", "cluster_data_dir"]
