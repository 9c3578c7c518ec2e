"""The audit log: one row per request that asked to change something, and per sign-in.

Who is kept as text beside the foreign keys, so an entry still names a user or
token after either is deleted.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.common.numbers import is_whole


class AuditEvent(models.Model):
    class Outcome(models.TextChoices):
        SUCCESS = "success", "success"
        REFUSED = "refused", "refused"
        FAILED = "failed", "failed"

    at = models.DateTimeField(default=timezone.now)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="+")
    username = models.CharField(max_length=150, blank=True)
    token = models.ForeignKey("accounts.ApiToken", null=True, blank=True,
                              on_delete=models.SET_NULL, related_name="+")
    token_hint = models.CharField(max_length=12, blank=True)
    tenant = models.ForeignKey("tenants.Tenant", null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="+",
                               help_text="The tenant of the object, else of the user.")
    address = models.CharField(max_length=64, blank=True)
    action = models.CharField(max_length=200, help_text="What was asked: the view's name, "
                              "or sign-in / sign-out / token refused.")
    method = models.CharField(max_length=8, blank=True)
    path = models.CharField(max_length=500, blank=True)
    object_type = models.CharField(max_length=60, blank=True)
    object_id = models.CharField(max_length=40, blank=True)
    object_text = models.CharField(max_length=300, blank=True)
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    message = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True,
                               help_text="What was sent, secrets left out (e.g. a plan's "
                               "acknowledgements).")

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["-at", "-id"], name="audit_newest"),
                   models.Index(fields=["tenant", "-at"], name="audit_tenant"),
                   models.Index(fields=["user", "-at"], name="audit_user"),
                   models.Index(fields=["object_type", "object_id"], name="audit_object")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.username or 'anonymous'} {self.action} " \
               f"{self.outcome}"

    @property
    def sent(self) -> str:
        """What was sent, one line: `key=value; ...` (secrets were never kept)."""
        text = "; ".join(f"{key}={value}" for key, value in self.details.items())
        return text if len(text) <= 200 else text[:199] + "…"

    @property
    def started_operation_id(self) -> int | None:
        """The Operation the request started, if it started one."""
        value = self.details.get("started operation") if isinstance(self.details, dict) else None
        return value if is_whole(value) else None

    @property
    def who(self) -> str:
        name = self.username or "anonymous"
        return f"{name} (token {self.token_hint}…)" if self.token_hint else name
