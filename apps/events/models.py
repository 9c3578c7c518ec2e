"""Subscriptions, the events they hear of, and one delivery per event and subscription.

An `Event` is written once, in the transaction of its fact (apps.events.record),
with an id (a UUID) the receiver dedupes by; a `Delivery` of it to each matching
subscription is unique on (subscription, event), so a retry, a re-sent lost
message or a second tick sends the same event again and never makes another.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Subscription(models.Model):
    """A URL (allowed by POZOL_ALERT_WEBHOOK_ALLOW) and the event kinds it hears of.
    Bodies are signed with `secret` (HMAC-SHA256), shown once when it is made."""

    name = models.CharField(max_length=100, unique=True)
    url = models.CharField(max_length=2000)
    events = models.JSONField(help_text="The event kinds delivered, by name.")
    secret = models.CharField(max_length=128)
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Event(models.Model):
    """Something that happened, as automation is told: its kind, what it happened to
    (`subject`: type, id, name) and the facts (`data`)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=64)
    subject = models.JSONField()
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        # event_time: the cursor's walk and pruning by age, both by time alone.
        indexes = [models.Index(fields=["kind", "created_at"], name="event_kind_time"),
                   models.Index(fields=["created_at"], name="event_time")]

    def __str__(self) -> str:
        return f"{self.kind} {self.id}"


class Delivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"  # waiting for its (next) attempt
        SENT = "sent"
        FAILED = "failed"  # every attempt failed, or refused for good

    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE,
                                     related_name="deliveries")
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=Status, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    log = models.JSONField(default=list, blank=True,
                           help_text="[{at, outcome, status}] per attempt.")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["subscription", "event"],
                                               name="event_delivered_once")]
        indexes = [models.Index(fields=["status", "next_attempt_at"],
                                name="event_delivery_due")]

    def __str__(self) -> str:
        return f"{self.event} to {self.subscription}"
