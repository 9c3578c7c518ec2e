"""Alerts, rules, channels, the delivery log and silences.

An `Alert` is written by whoever sees its condition, through its kind
(apps.common.alert_kinds: the one registry of kinds, each contributed by the app
that raises it); this app decides the conditions nobody else watches, and what
reaches people: a `Rule` per kind (built in, seeded by a migration, edited by
operators), `Channel`s to deliver to, a `Delivery` per alert event and channel
(the visible log, with every attempt), and `Silence`s.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from apps.common import alert_kinds, events
from apps.fleet.models import Host


def validate_kind(name: str) -> None:
    """A registered kind: the registry, not the column's choices, lists them, so a new
    kind needs no migration."""
    if alert_kinds.get(name) is None:
        raise ValidationError(f"There is no alert kind {name!r}.", code="invalid_choice")


class Alert(models.Model):
    """An alert that fired on a host: open while its condition holds, resolved after.

    Whoever sees the condition writes it (discovery, the snapshot and replication
    ticks, the SSH layer, restore drills, this app's evaluator) through its kind's
    raise_once / raise_or_resolve / resolve, which land here. What reaches people
    is this app's dispatch: it keeps on these rows when the firing and the
    resolution were announced (`notified_at`, `resolution_notified_at`), and the
    operator's acknowledgement.
    """

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="alerts")
    kind = models.CharField(max_length=32, validators=[validate_kind])
    message = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    # Set when the firing was announced (or decided silent), and when its
    # resolution was: a firing alert resolved but not yet announced is reopened by
    # raise_once, so a flapping condition is one alert, not many.
    notified_at = models.DateTimeField(null=True, blank=True)
    resolution_notified_at = models.DateTimeField(null=True, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                        on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at"]
        # The API lists newest first (id breaks ties): an index walk, not a sort of every alert.
        indexes = [models.Index(fields=["host", "kind", "resolved_at"], name="alert_open"),
                   models.Index(fields=["created_at", "id"], name="alert_created_idx")]

    def __str__(self) -> str:
        return f"{self.host}: {self.kind}"

    @classmethod
    def raise_once(cls, host: Host, kind: str, message: str) -> Alert:
        alert_kinds.require(kind)
        alert = cls.objects.filter(host=host, kind=kind, resolved_at=None).first()
        if alert is not None:
            return alert
        alert = cls._reopened(host, kind, message) or cls.objects.create(
            host=host, kind=kind, message=message)
        ALERT_OPENED.emit(alert.event_subject(), kind=kind, host=host.pk,
                          host_name=host.name, message=message)
        return alert

    def event_subject(self) -> dict:
        return {"type": "alert", "id": self.pk, "name": f"{self.kind} on {self.host.name}"}

    @classmethod
    def _reopened(cls, host: Host, kind: str, message: str) -> Alert | None:
        """The hysteresis of resolution: an alert whose firing was announced and
        whose resolution is not yet (it waits for its rule's clear time) is
        still the same incident when the condition returns."""
        alert = cls.objects.filter(host=host, kind=kind, notified_at__isnull=False,
                                   resolved_at__isnull=False,
                                   resolution_notified_at=None).order_by("-created_at").first()
        if alert is None:
            return None
        alert.resolved_at, alert.message = None, message
        alert.save(update_fields=["resolved_at", "message"])
        return alert

    @classmethod
    def raise_or_resolve(cls, host: Host, kind: str, message: str | None) -> None:
        """One open alert while there is a message, kept saying what is true now
        (figures change between discoveries); resolved once there is none."""
        if message is None:
            cls.resolve(kind, host=host)
            return
        alert = cls.raise_once(host, kind, message)
        if alert.message != message:
            alert.message = message
            alert.save(update_fields=["message"])

    @classmethod
    def resolve(cls, kind: str, *, host: Host | None = None,
                except_host_ids: list[int] | None = None, at: datetime | None = None) -> None:
        """The open alerts of `kind` resolved: on `host`, or on every host but those."""
        alert_kinds.require(kind)
        open_alerts = cls.objects.filter(kind=kind, resolved_at=None)
        if host is not None:
            open_alerts = open_alerts.filter(host=host)
        if except_host_ids is not None:
            open_alerts = open_alerts.exclude(host_id__in=except_host_ids)
        resolved = list(open_alerts.select_related("host"))
        if not resolved:
            return
        at = at or timezone.now()
        cls.objects.filter(pk__in=[alert.pk for alert in resolved],
                           resolved_at=None).update(resolved_at=at)
        for alert in resolved:
            ALERT_RESOLVED.emit(alert.event_subject(), kind=kind, host=alert.host_id,
                                host_name=alert.host.name, message=alert.message)


# Automation hears of these (apps/events); the registry is apps/common/events.py.
ALERT_OPENED = events.register(events.EventKind("alert.opened", "An alert opened"))
ALERT_RESOLVED = events.register(events.EventKind("alert.resolved", "An alert was resolved"))


class Rule(models.Model):
    kind = models.CharField(max_length=32, unique=True)
    enabled = models.BooleanField(default=True)
    threshold = models.FloatField(null=True, blank=True, help_text="In the kind's unit.")
    hysteresis = models.FloatField(default=0, help_text="Margin before a threshold clears.")
    for_minutes = models.PositiveIntegerField(
        default=0, help_text="Open this long before it is delivered.")
    clear_minutes = models.PositiveIntegerField(
        default=5, help_text="Resolved this long before the resolution is delivered.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["kind"]

    def __str__(self) -> str:
        return self.kind


class Channel(models.Model):
    class Kind(models.TextChoices):
        EMAIL = "email"
        WEBHOOK = "webhook", "webhook (JSON)"
        SLACK = "slack", "webhook (Slack-compatible)"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=Kind)
    # Addresses separated by commas for email; the URL for a webhook.
    target = models.CharField(max_length=2000)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Delivery(models.Model):
    class Event(models.TextChoices):
        FIRING = "firing"
        RESOLVED = "resolved"
        TEST = "test"

    class Status(models.TextChoices):
        PENDING = "pending"  # waiting for its (next) attempt
        SENT = "sent"
        FAILED = "failed"  # every attempt failed, or refused for good

    alert = models.ForeignKey(Alert, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="deliveries")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=16, choices=Event)
    body = models.JSONField(help_text="The event as delivered (apps.alerts.dispatch).")
    status = models.CharField(max_length=16, choices=Status, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    log = models.JSONField(default=list, blank=True, help_text="[{at, outcome}] per attempt.")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="delivery_due")]

    def __str__(self) -> str:
        return f"{self.event} to {self.channel}"


class Silence(models.Model):
    """No delivery for matching alerts until `until` (they still open and resolve).
    An empty host or kind matches every host or kind."""

    host = models.ForeignKey(Host, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="+")
    kind = models.CharField(max_length=32, blank=True)
    until = models.DateTimeField()
    reason = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-until"]

    def __str__(self) -> str:
        return f"silence {self.kind or 'all'} on {self.host or 'all hosts'}"


class ScrubSchedule(models.Model):
    """`zpool scrub` of one pool every `every_days` (default monthly), started by the
    beat task when `next_at` passes; each run is a pools.scrub Operation."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="scrub_schedules")
    pool = models.CharField(max_length=255)
    every_days = models.PositiveIntegerField(default=30)
    enabled = models.BooleanField(default=True)
    next_at = models.DateTimeField()
    last_operation = models.ForeignKey("ops.Operation", null=True, blank=True,
                                       on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["host__name", "pool"]
        constraints = [models.UniqueConstraint(fields=["host", "pool"], name="scrub_per_pool")]

    def __str__(self) -> str:
        return f"scrub {self.host}:{self.pool} every {self.every_days} days"
