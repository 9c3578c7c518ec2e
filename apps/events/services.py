"""What the API and beat ask of events; one function each. Refusals are EventError
naming the field."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.alerts import delivery as alert_delivery
from apps.alerts.core import webhooks
from apps.common import events as registry
from apps.common.errors import DomainError
from apps.events import sending
from apps.events.core import signing
from apps.events.models import Delivery, Event, Subscription

MAX_KINDS = 50
PRUNE_BATCH = 1000

# Sent only to the subscription it tests (POST .../ping/), never subscribed to.
PING = registry.register(registry.EventKind("subscription.ping",
                                            "A test event sent to one subscription"))


class EventError(DomainError):
    code = "event_refused"


def check_url(url: str) -> str:
    try:
        webhooks.parse_url(url, alert_delivery.allowlist())
    except webhooks.Refused as exc:
        raise EventError(f"This URL is refused: {exc}.", fields={"url": [str(exc)]}) from None
    return url


def check_kinds(names: list[str]) -> list[str]:
    """The kinds, each registered, no repeats, in a stable order."""
    if not isinstance(names, list) or not names:
        raise EventError("Name at least one event kind.", fields={"events": ["required"]})
    if len(names) > MAX_KINDS:
        raise EventError(f"Name at most {MAX_KINDS} event kinds.",
                         fields={"events": ["too many"]})
    unknown = [n for n in names if not isinstance(n, str) or registry.get(n) is None
               or n == PING.name]
    if unknown:
        known = ", ".join(k.name for k in registry.kinds() if k != PING)
        raise EventError(f"Unknown event kind(s): {', '.join(map(str, unknown))}. "
                         f"Known: {known}.", fields={"events": [f"unknown: {unknown}"]})
    return sorted(set(names))


def create_subscription(*, name: str, url: str, events: list[str], enabled: bool = True,
                        by=None) -> Subscription:
    subscription = Subscription(name=name, url=check_url(url), events=check_kinds(events),
                                enabled=enabled, secret=signing.new_secret(),
                                created_by=by if by and by.is_authenticated else None)
    _unique_name(subscription)
    subscription.save()
    return subscription


def update_subscription(subscription: Subscription, **changes) -> Subscription:
    if "url" in changes:
        changes["url"] = check_url(changes["url"])
    if "events" in changes:
        changes["events"] = check_kinds(changes["events"])
    for name, value in changes.items():
        setattr(subscription, name, value)
    _unique_name(subscription)
    subscription.save()
    return subscription


def _unique_name(subscription: Subscription) -> None:
    if Subscription.objects.filter(name=subscription.name).exclude(pk=subscription.pk).exists():
        raise EventError(f"A subscription named {subscription.name!r} exists.",
                         fields={"name": ["already taken"]}, status=409, code="conflict")


def rotate_secret(subscription: Subscription) -> Subscription:
    """A new secret, effective for the next attempt of every delivery."""
    subscription.secret = signing.new_secret()
    subscription.save(update_fields=["secret"])
    return subscription


def delete_subscription(subscription: Subscription) -> None:
    subscription.delete()


def ping(subscription: Subscription) -> Delivery:
    """A test event to this subscription only, through the same signing, retries and log."""
    with transaction.atomic():
        event = Event.objects.create(kind=PING.name, data={},
                                     subject={"type": "subscription", "id": subscription.pk,
                                              "name": subscription.name})
        row = Delivery.objects.create(subscription=subscription, event=event,
                                      next_attempt_at=timezone.now())
        sending.enqueue([row.pk])
    return row


def redeliver(row: Delivery) -> Delivery:
    if row.status == Delivery.Status.PENDING:
        raise EventError("This delivery is still being attempted.",
                         fields={}, status=409, code="conflict")
    with transaction.atomic():
        return sending.redeliver(row)


def tick(now: datetime) -> int:
    """Beat: re-send deliveries whose message was lost (returns how many), and forget
    old events."""
    with transaction.atomic():
        resent = sending.resend_lost(now)
    prune(now)
    return resent


def prune(now: datetime) -> int:
    """Forget events older than operations are kept (OPERATION_RETENTION_DAYS: one
    ends each operation), with their deliveries, in short batches; an event still
    waiting to be delivered stays until its delivery ends."""
    cutoff = now - timedelta(days=settings.POZOL["OPERATION_RETENTION_DAYS"])
    removed = 0
    while True:
        batch = list(Event.objects.filter(created_at__lt=cutoff)
                     .exclude(deliveries__status=Delivery.Status.PENDING)
                     .values_list("pk", flat=True)[:PRUNE_BATCH])
        if not batch:
            return removed
        with transaction.atomic():
            Delivery.objects.filter(event_id__in=batch).delete()
            removed += Event.objects.filter(pk__in=batch).delete()[0]

