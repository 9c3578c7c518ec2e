"""Query-string filters of the links list."""

import django_filters

from apps.api.filters import EnumFilter, IdFilter, TrueFalseFilter
from apps.replication.models import ReplicationLink


class LinkFilter(django_filters.FilterSet):
    source_host = IdFilter(field_name="source_host_id",
                           help_text="only links sending from the host with this id")
    target_host = IdFilter(field_name="target_host_id",
                           help_text="only links receiving into the host with this id")
    state = EnumFilter(choices=ReplicationLink.State.choices,
                       help_text="what the last run found")
    paused = TrueFalseFilter(help_text="only paused (or running on schedule) links")

    class Meta:
        model = ReplicationLink
        fields = ["source_host", "target_host", "state", "paused"]
