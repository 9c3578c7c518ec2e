"""Sending one Delivery: mail through Django's mail settings, webhooks to
addresses the allowlist permits (checked again on the addresses resolved now,
and the request goes to the checked address).

A failure that may pass is retried by Celery: the alerts.deliver task
(tasks.py) raises it and its autoretry_for / retry_backoff / max_retries, set
from retry_options(), send the next attempt at a doubling delay, up to
POZOL_ALERT_DELIVERY_ATTEMPTS. Each attempt is logged on the row, which is the
truth: it counts the attempts, says when the next is due (the delay Celery
waits, from Celery's own backoff function) and when it failed for good, and the
tick re-sends a due delivery whose message was lost.

The task is sent by its name, so this module needs nothing of tasks.py (which
calls it)."""

from __future__ import annotations

import http.client
import json
import logging
import smtplib
import socket
import ssl
from datetime import datetime, timedelta
from functools import partial

from celery import current_app
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from kombu.exceptions import OperationalError

from apps.alerts.core import webhooks
from apps.alerts.models import Channel, Delivery

log = logging.getLogger(__name__)

DELIVER_TASK = "alerts.deliver"
LOST_AFTER = timedelta(minutes=1)  # due this long ago and still pending: its message was lost


class Failed(Exception):
    """This attempt failed; another may succeed."""


def retry_options() -> dict:
    """The alerts.deliver task's retries: after the n-th failed attempt Celery waits
    POZOL_ALERT_RETRY_SECONDS * 2**(n-1) (no jitter, no cap below that), and the
    last of POZOL_ALERT_DELIVERY_ATTEMPTS is not retried."""
    attempts = settings.POZOL["ALERT_DELIVERY_ATTEMPTS"]
    factor = settings.POZOL["ALERT_RETRY_SECONDS"]
    return {"autoretry_for": (Failed,), "max_retries": attempts - 1, "retry_backoff": factor,
            "retry_backoff_max": factor * 2 ** attempts, "retry_jitter": False}


def attempts_allowed() -> int:
    return settings.POZOL["ALERT_DELIVERY_ATTEMPTS"]


def backoff(attempts: int) -> int:
    """Seconds Celery waits after `attempts` failed attempts, as its autoretry counts."""
    options = retry_options()
    return get_exponential_backoff_interval(
        factor=options["retry_backoff"], retries=attempts - 1,
        maximum=options["retry_backoff_max"], full_jitter=options["retry_jitter"])


def enqueue(ids: list[int], task: str = DELIVER_TASK) -> None:
    """New deliveries, to the worker once the transaction commits (`task`: the one that
    attempts them; apps/events sends its deliveries through here too)."""
    for pk in ids:
        transaction.on_commit(partial(_send_to_worker, task, pk))


def _send_to_worker(task: str, pk: int, attempts: int = 0) -> None:
    """After commit; `retries` carries on Celery's count from the row's, so its backoff
    is the row's. A broker that is away only delays it: the tick re-sends a due
    delivery still pending (resend_lost), as the sweeper does for operations."""
    try:
        current_app.send_task(task, (pk,), retries=attempts)
    except (OperationalError, OSError) as exc:
        log.warning("broker unavailable, %s of %s left for the next tick: %s", task, pk, exc)


def resend_lost(now: datetime, deliveries: QuerySet | None = None,
                task: str = DELIVER_TASK) -> int:
    """Re-send the pending deliveries (alerts', or `deliveries` attempted by `task`) due
    LOST_AFTER ago: their message was lost."""
    deliveries = Delivery.objects.all() if deliveries is None else deliveries
    lost = list(deliveries.filter(status=Delivery.Status.PENDING,
                                  next_attempt_at__lte=now - LOST_AFTER)
                .values_list("pk", "attempts")[:500])
    for pk, attempts in lost:
        transaction.on_commit(partial(_send_to_worker, task, pk, attempts))
    return len(lost)


def attempt(pk: int) -> Delivery | None:
    """One attempt of a due, pending delivery; None when it is not (already sent,
    not due yet, or another worker holds it). Still pending after it: retry."""
    with transaction.atomic():
        row = (Delivery.objects.select_for_update(skip_locked=True).select_related("channel")
               .filter(pk=pk, status=Delivery.Status.PENDING,
                       next_attempt_at__lte=timezone.now()).first())
        if row is None:
            return None
        outcome, final = _send(row)
        _record(row, outcome, final)
    return row


def _send(row: Delivery) -> tuple[str | None, bool]:
    """(None, True) when sent; (error, final) otherwise."""
    try:
        send(row.channel, row.body)
    except webhooks.Refused as exc:
        return f"refused: {exc}", True
    except (Failed, OSError, smtplib.SMTPException, http.client.HTTPException) as exc:
        return f"{type(exc).__name__}: {exc}"[:500], False
    return None, True


def _record(row: Delivery, error: str | None, final: bool) -> None:
    now = timezone.now()
    row.attempts += 1
    row.log = [*row.log, {"at": now.isoformat(), "outcome": error or "sent"}]
    if error is None:
        row.status, row.sent_at, row.next_attempt_at = Delivery.Status.SENT, now, None
    elif final or row.attempts >= settings.POZOL["ALERT_DELIVERY_ATTEMPTS"]:
        row.status, row.next_attempt_at = Delivery.Status.FAILED, None
    else:
        row.next_attempt_at = now + timedelta(seconds=backoff(row.attempts))
    row.last_error = error or ""
    row.save(update_fields=["attempts", "log", "status", "sent_at", "next_attempt_at",
                            "last_error"])


def send(channel: Channel, event: dict) -> None:
    if channel.kind == Channel.Kind.EMAIL:
        send_email(recipients(channel.target), event)
    elif channel.kind == Channel.Kind.SLACK:
        post_json(channel.target, webhooks.slack_body(event))
    else:
        post_json(channel.target, webhooks.generic_body(event))


def recipients(target: str) -> list[str]:
    return [a.strip() for a in target.split(",") if a.strip()]


def send_email(to: list[str], event: dict) -> None:
    subject = f"[PoZoL] {event['status'].upper()}: {event['title']} on {event['host']}"
    lines = [event["message"], "", f"Host: {event['host']}", f"Since: {event['since']}"]
    if event.get("resolved_at"):
        lines.append(f"Resolved: {event['resolved_at']}")
    lines.append(event["url"])
    send_mail(subject, "\n".join(lines), settings.DEFAULT_FROM_EMAIL, to, fail_silently=False)


def allowlist() -> webhooks.Allowlist:
    return webhooks.Allowlist.parse(settings.POZOL["ALERT_WEBHOOK_ALLOW"])


def post_json(url: str, body: dict) -> int:
    """POST `body`; the status, or Failed for anything but 2xx. No redirects."""
    return post_bytes(url, json.dumps(body).encode(), {
        "Content-Type": "application/json", "User-Agent": "PoZoL-alerts"})


def post_bytes(url: str, data: bytes, headers: dict) -> int:
    """POST `data` to an allowed URL, at the address checked now; the status, or Failed
    (carrying the status) for anything but 2xx. Also apps/events' signed bodies."""
    allow, timeout = allowlist(), settings.POZOL["ALERT_WEBHOOK_TIMEOUT"]
    target = webhooks.parse_url(url, allow)
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise Failed(f"{target.host} does not resolve: {exc}") from None
    address = webhooks.checked_address(target, [info[4][0] for info in infos], allow)
    kind = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    connection = kind(target.host, target.port, address, timeout)
    try:
        connection.request("POST", target.path, body=data, headers=headers)
        response = connection.getresponse()
        response.read(65536)
    finally:
        connection.close()
    if not 200 <= response.status < 300:
        failed = Failed(f"HTTP {response.status} {response.reason}")
        failed.status = response.status
        raise failed
    return response.status


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to the address that was checked, not to a second lookup's."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
