"""What reaches people: an alert's firing once it has been open for its rule's
time, its resolution once that has held for the rule's clear time; one
Delivery per enabled channel, unless a silence covers the alert."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from apps.alerts import delivery
from apps.alerts.models import Alert, Channel, Delivery, Rule, Silence
from apps.alerts.rules import rules_by_kind
from apps.common import alert_kinds


def announce(now: datetime) -> int:
    """Deliveries made for alerts whose firing or resolution is due; their number."""
    rules, made = rules_by_kind(), []
    for alert in Alert.objects.filter(resolved_at=None, notified_at=None).select_related("host"):
        rule = rules.get(alert.kind)
        if rule is not None and rule.enabled and \
                alert.created_at + timedelta(minutes=rule.for_minutes) <= now:
            made += _announce(alert, "notified_at", Delivery.Event.FIRING, now)
    for alert in Alert.objects.filter(resolved_at__isnull=False, notified_at__isnull=False,
                                      resolution_notified_at=None).select_related("host"):
        clear = _clear_minutes(rules.get(alert.kind), alert.kind)
        if alert.resolved_at + timedelta(minutes=clear) <= now:
            made += _announce(alert, "resolution_notified_at", Delivery.Event.RESOLVED, now)
    return len(made)


def _clear_minutes(rule: Rule | None, kind: str) -> int:
    if rule is not None:
        return rule.clear_minutes
    spec = alert_kinds.get(kind)
    return spec.clear_minutes if spec else 0


def _announce(alert: Alert, mark: str, event: str, now: datetime) -> list[Delivery]:
    with transaction.atomic():
        # The mark is taken once: two ticks at the same moment announce once.
        taken = Alert.objects.filter(pk=alert.pk, **{mark: None}).update(**{mark: now})
        if not taken or silenced(alert, now):
            return []
        body = event_of(alert, event)
        made = [Delivery.objects.create(alert=alert, channel=channel, event=event, body=body,
                                        next_attempt_at=now)
                for channel in Channel.objects.filter(enabled=True)]
        delivery.enqueue([d.pk for d in made])
    return made


def silenced(alert: Alert, now: datetime) -> Silence | None:
    return Silence.objects.filter(
        Q(host=alert.host) | Q(host=None), Q(kind=alert.kind) | Q(kind=""),
        until__gt=now).first()


def event_of(alert: Alert, status: str) -> dict:
    """The event as every channel gets it (the generic webhook's JSON)."""
    spec = alert_kinds.get(alert.kind)
    return {"status": status, "alert_id": alert.pk, "kind": alert.kind,
            "title": spec.title if spec else alert.kind, "host": alert.host.name,
            "host_id": alert.host_id, "message": alert.message,
            "since": alert.created_at.isoformat(),
            "resolved_at": alert.resolved_at.isoformat() if alert.resolved_at else None,
            "url": f"{settings.POZOL['BASE_URL'].rstrip('/')}/alerts/{alert.pk}/"}
