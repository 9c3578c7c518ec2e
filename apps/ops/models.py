"""An Operation is one unit of remote work, driven step by step.

The row is the truth about intent and progress (Redis only carries "run the
next step of #N"), so a lost worker, a restarted broker or a duplicated
message never loses or doubles work: whoever holds the lease runs the step.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class OperationQuerySet(models.QuerySet):
    # What an operations table shows (templates/ops/_table.html). Lists read only
    # these: state can hold a whole host's facts between discovery steps, and
    # joining the host would read its facts (about 68 KB) for every row.
    TABLE_COLUMNS = ("kind", "subject", "status", "progress", "message", "trigger",
                     "triggered_by__username", "created_at", "started_at", "finished_at")

    def for_table(self) -> OperationQuerySet:
        return self.select_related("triggered_by").only(*self.TABLE_COLUMNS)


class Operation(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        WAITING = "waiting"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Trigger(models.TextChoices):
        UI = "ui"
        API = "api"
        SCHEDULE = "schedule"
        SYSTEM = "system"

    ACTIVE = (Status.PENDING, Status.RUNNING, Status.WAITING)

    kind = models.CharField(max_length=64)
    host = models.ForeignKey("fleet.Host", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="operations")
    subject = models.CharField(max_length=200, help_text="What it acts on, kept after deletion.")
    mutating = models.BooleanField(default=False)
    step = models.CharField(max_length=64)
    state = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status, default=Status.PENDING)
    progress = models.PositiveSmallIntegerField(default=0)
    message = models.CharField(max_length=300, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    wake_at = models.DateTimeField(null=True, blank=True)
    # An operation that waits for this one (a rollout for its children): woken the
    # moment this one ends rather than at its next poll.
    waiter = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+")
    attempts = models.PositiveIntegerField(default=0, help_text="Tries of the current step.")
    deadline = models.DateTimeField(null=True, blank=True)
    trigger = models.CharField(max_length=16, choices=Trigger, default=Trigger.SYSTEM)
    triggered_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = OperationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        # The lists sort by time, newest first, and filter on host, kind and status;
        # the purge finds old rows by time.
        indexes = [models.Index(fields=["status", "lease_expires_at"]),
                   models.Index(fields=["host", "status"]),
                   models.Index(fields=["created_at", "id"], name="ops_op_created_idx"),
                   models.Index(fields=["host", "created_at"], name="ops_op_host_created_idx"),
                   models.Index(fields=["kind", "created_at"], name="ops_op_kind_created_idx"),
                   models.Index(fields=["status", "created_at"],
                                name="ops_op_status_created_idx")]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind} {self.subject} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE


class LogLine(models.Model):
    class Level(models.TextChoices):
        INFO = "info"
        COMMAND = "command"
        WARNING = "warning"
        ERROR = "error"

    operation = models.ForeignKey(Operation, on_delete=models.CASCADE, related_name="log_lines")
    at = models.DateTimeField(auto_now_add=True)
    level = models.CharField(max_length=16, choices=Level, default=Level.INFO)
    text = models.TextField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.text[:80]
