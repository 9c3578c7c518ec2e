"""The clones as lists show them: host and author joined, and each clone's size, in one
query whatever the number of clones.

A clone's size (`space`) is what ZFS says its datasets use (`used` of
`<pool>/pozol_clones/<name>`, its data and WAL clones together, as the clones
tick last read it, else as the host's last listing found it): it grows as the
clone diverges from its snapshot. None until either has seen them.
"""

from __future__ import annotations

from django.db.models import BigIntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, Concat

from apps.clones.core.layout import CLONES_PARENT
from apps.clones.models import Clone
from apps.fleet.models import Dataset, Host


def for_table() -> QuerySet:
    used = (Dataset.objects
            .filter(host=OuterRef("host"),
                    name__endswith=Concat(Value(f"/{CLONES_PARENT}/"), OuterRef("name")))
            .order_by().values("used")[:1])
    # The clones tick's reading when there is one (fresher than the host's listing).
    # The host's facts (about 68 KB of JSON each) are never shown with a clone: decoding
    # them for every row was most of a page of the API's list.
    return (Clone.objects.select_related("host", "created_by", "tenant", "last_operation", "link")
            .defer("host__facts", "last_operation__state")
            .annotate(space=Coalesce("used", Subquery(used, output_field=BigIntegerField()))))


def live_of(host: Host) -> QuerySet:
    """The host's clones that are not destroyed, newest first."""
    return for_table().filter(host=host).exclude(state=Clone.State.DESTROYED)
