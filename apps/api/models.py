"""What the API keeps of its own: the first answer to each Idempotency-Key
(apps.api.idempotency)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class IdempotentRequest(models.Model):
    """A POST made with an Idempotency-Key: reserved before the view runs (the unique
    constraint is what stops two concurrent duplicates both starting work), then
    holding the answer that a repeat within the window gets back."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="sha256 of path and body")
    path = models.CharField(max_length=500)
    status = models.PositiveSmallIntegerField(null=True, blank=True,
                                              help_text="None while the first request runs")
    body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"],
                                               name="idempotency_key_per_user")]
        indexes = [models.Index(fields=["created_at"], name="idempotency_age")]

    def __str__(self) -> str:
        return f"{self.key} of {self.user_id}"
