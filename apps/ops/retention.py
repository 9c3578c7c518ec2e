"""Forget old operations, so history stays bounded at any fleet size.

At 1,000 hosts scheduled discovery alone makes 96,000 operations a day, with
their log lines. Finished operations older than the retention are deleted in
small batches (short transactions, no long lock on the table the engine
claims steps from). An operation something else still points at (a plan's
apply, a benchmark's run) is kept: it is part of that record's evidence.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.ops.models import LogLine, Operation

log = logging.getLogger("pozol.ops")

BATCH = 1000


def _referenced() -> Q:
    """Operations another model refers to, found from the schema rather than a list
    of apps, so a new app that keeps operations is covered without touching ops."""
    keep = Q()
    # include_hidden: plans and benchmarks point here with related_name="+".
    for relation in Operation._meta.get_fields(include_hidden=True):
        if not relation.auto_created or relation.concrete or relation.related_model is LogLine:
            continue
        column = relation.field.attname
        keep |= Q(pk__in=relation.related_model._default_manager
                  .filter(**{f"{column}__isnull": False}).values(column))
    return keep


def expired(now: datetime | None = None) -> QuerySet[Operation]:
    """Finished operations past the retention that nothing refers to."""
    days = settings.POZOL["OPERATION_RETENTION_DAYS"]
    cutoff = (now or timezone.now()) - timedelta(days=days)
    queryset = (Operation.objects.filter(created_at__lt=cutoff)
                .exclude(status__in=Operation.ACTIVE))
    if referenced := _referenced():
        queryset = queryset.exclude(referenced)
    return queryset


def purge(now: datetime | None = None, batch: int = BATCH) -> int:
    """Delete expired operations and their log lines; returns how many operations."""
    total = 0
    while ids := list(expired(now).order_by("created_at").values_list("pk", flat=True)[:batch]):
        with transaction.atomic():
            LogLine.objects.filter(operation_id__in=ids).delete()
            _, per_model = Operation.objects.filter(pk__in=ids).delete()
        deleted = per_model.get(Operation._meta.label, 0)
        total += deleted
        if deleted < len(ids):  # someone else purged meanwhile: stop rather than spin
            break
    if total:
        log.info("purged %d operations older than %d days", total,
                 settings.POZOL["OPERATION_RETENTION_DAYS"])
    return total
