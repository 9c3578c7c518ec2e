"""The links as every list shows them (the fleet page, the host tab, the API): one
query whatever their number.

Both hosts are joined without their facts (about 68 KB each), and the id of a
link's active run comes from a subquery, not a query per row.
"""

from __future__ import annotations

from django.db.models import CharField, OuterRef, Q, QuerySet, Subquery
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.utils import timezone

from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.replication import services, steps
from apps.replication.models import ReplicationLink

_HOST_COLUMNS = ("name",)


def for_table() -> QuerySet[ReplicationLink]:
    """Links with `running_operation_id` (the active run's id, or None)."""
    running = (Operation.objects
               .filter(kind=steps.RUN.name, status__in=Operation.ACTIVE)
               # As text: a removal's state names its link by name, and a cast to
               # a number could meet that row before the kind filter drops it.
               .annotate(link_text=KeyTextTransform("link", "state"))
               .filter(link_text=Cast(OuterRef("pk"), CharField()))
               .order_by("-pk").values("pk")[:1])
    return (ReplicationLink.objects
            .select_related("source_host", "target_host", "rollback_opted_in_by")
            .defer("private_key_encrypted",
                   *(f"{side}__{column}" for side in ("source_host", "target_host")
                     for column in _deferred_host_columns()))
            .annotate(running_operation_id=Subquery(running)))


def of_host(host: Host) -> QuerySet[ReplicationLink]:
    """The links that send from or receive into `host`."""
    return for_table().filter(Q(source_host=host) | Q(target_host=host))


def _deferred_host_columns() -> list[str]:
    return [field.attname for field in Host._meta.concrete_fields
            if field.attname not in ("id", *_HOST_COLUMNS)]


def shown(links) -> list[ReplicationLink]:
    """The links as a page shows them, each with `lag` (at one `now`) and
    `error_line`, the first line of its last error."""
    now = timezone.now()
    rows = list(links)
    for link in rows:
        link.lag = services.lag_of(link, now)
        link.error_line = link.last_error.splitlines()[0] if link.last_error.strip() else ""
    return rows
