"""Rules, channels, the delivery log and silences.

An alert that fired is apps/fleet's `Alert` (one home, written by whoever sees
the condition); this app decides the conditions nobody else watches, and what
reaches people: a `Rule` per kind (built in, seeded by a migration, edited by
operators), `Channel`s to deliver to, a `Delivery` per alert event and channel
(the visible log, with every attempt), and `Silence`s.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.fleet.models import Alert, Host


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
