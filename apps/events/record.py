"""The sink apps/common/events.py calls: the event and its deliveries, written in the
caller's transaction (inside a savepoint, so a failure here never spoils the
fact's transaction), and handed to the workers once that commits."""

from __future__ import annotations

import logging

from django.db import DatabaseError, transaction
from django.utils import timezone

from apps.events import sending
from apps.events.models import Delivery, Event, Subscription

log = logging.getLogger("pozol.events")


def record(kind: str, subject: dict, data: dict) -> Event | None:
    try:
        with transaction.atomic():
            event = Event.objects.create(kind=kind, subject=subject, data=data)
            ids = deliveries_of(event)
    except DatabaseError:
        log.exception("event %s about %s was not recorded", kind, subject)
        return None
    sending.enqueue(ids)
    return event


def deliveries_of(event: Event) -> list[int]:
    """One delivery per enabled subscription naming the event's kind."""
    now = timezone.now()
    subscribed = [s for s in Subscription.objects.filter(enabled=True).only("pk", "events")
                  if event.kind in s.events]
    rows = Delivery.objects.bulk_create(
        [Delivery(subscription=s, event=event, next_attempt_at=now) for s in subscribed])
    return [row.pk for row in rows]
