"""Sending one event Delivery: the signed body to the subscription's URL, through the
alert webhooks' allowlist and pinned connection (apps.alerts.delivery.post_bytes:
checked when the URL is saved and again on the addresses resolved now; the
request goes to the checked address, no redirects).

Retries are Celery's, as for alerts: events.deliver raises Failed and its
autoretry (retry_options: retry_backoff, max_retries from
POZOL_ALERT_RETRY_SECONDS and POZOL_ALERT_DELIVERY_ATTEMPTS) sends the next
attempt at a doubling delay. Each attempt is logged on the row (the truth), and
the beat's events.tick re-sends a due delivery whose message was lost. The
event's id and body are the same on every attempt; only the timestamp and
signature are new.
"""

from __future__ import annotations

import http.client
import logging
import time
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.alerts import delivery as alert_delivery
from apps.alerts.core import webhooks
from apps.events.core import signing
from apps.events.models import Delivery, Event

log = logging.getLogger("pozol.events")

DELIVER_TASK = "events.deliver"


class Failed(Exception):
    """This attempt failed; another may succeed."""


def retry_options() -> dict:
    return {**alert_delivery.retry_options(), "autoretry_for": (Failed,)}


def enqueue(ids: list[int]) -> None:
    alert_delivery.enqueue(ids, DELIVER_TASK)


def resend_lost(now) -> int:
    return alert_delivery.resend_lost(now, Delivery.objects.all(), DELIVER_TASK)


def event_body(event: Event) -> dict:
    """What the receiver gets: the same on every attempt of every subscription."""
    return {"id": str(event.id), "kind": event.kind, "created_at": event.created_at.isoformat(),
            "subject": event.subject, "data": event.data}


def attempt(pk: int) -> Delivery | None:
    """One attempt of a due, pending delivery; None when it is not (already sent, not
    due yet, or another worker holds it). Still pending after it: retry."""
    with transaction.atomic():
        row = (Delivery.objects.select_for_update(skip_locked=True, of=("self",))
               .select_related("subscription", "event")
               .filter(pk=pk, status=Delivery.Status.PENDING,
                       next_attempt_at__lte=timezone.now()).first())
        if row is None:
            return None
        status, error, final = _send(row)
        _record(row, status, error, final)
    return row


def _send(row: Delivery) -> tuple[int | None, str | None, bool]:
    """(HTTP status, error or None when sent, final)."""
    body = signing.body_of(event_body(row.event))
    headers = signing.headers(row.subscription.secret, int(time.time()), body,
                              row.event.kind, str(row.event.id))
    try:
        answered = alert_delivery.post_bytes(row.subscription.url, body, headers)
    except webhooks.Refused as exc:
        return None, f"refused: {exc}", True
    except alert_delivery.Failed as exc:
        return getattr(exc, "status", None), f"Failed: {exc}"[:500], False
    except (OSError, http.client.HTTPException) as exc:
        return None, f"{type(exc).__name__}: {exc}"[:500], False
    return answered, None, True


def _record(row: Delivery, status: int | None, error: str | None, final: bool) -> None:
    now = timezone.now()
    row.attempts += 1
    row.log = [*row.log, {"at": now.isoformat(), "outcome": error or "sent", "status": status}]
    if error is None:
        row.status, row.sent_at, row.next_attempt_at = Delivery.Status.SENT, now, None
    elif final or row.attempts >= alert_delivery.attempts_allowed():
        row.status, row.next_attempt_at = Delivery.Status.FAILED, None
    else:
        row.next_attempt_at = now + timedelta(seconds=alert_delivery.backoff(row.attempts))
    row.last_error = error or ""
    row.save(update_fields=["attempts", "log", "status", "sent_at", "next_attempt_at",
                            "last_error"])


def redeliver(row: Delivery) -> Delivery:
    """The same delivery (same event, same id) due again now, e.g. after the receiver
    was fixed: never a second event."""
    # The attempts count again from none (Celery's backoff follows the row); the log
    # keeps every earlier attempt.
    Delivery.objects.filter(pk=row.pk).update(status=Delivery.Status.PENDING, attempts=0,
                                              next_attempt_at=timezone.now())
    enqueue([row.pk])
    row.refresh_from_db()
    return row
