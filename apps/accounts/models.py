"""API tokens, stored hashed: a leaked database does not leak working tokens."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "pzl_"  # noqa: S105  a visible prefix, not a secret


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiTokenManager(models.Manager["ApiToken"]):
    def issue(self, user, name: str = "",
              expires_at: datetime | None = None) -> tuple[ApiToken, str]:
        """Create a token and return it with its only plaintext copy."""
        token = self.model(user=user, name=name, expires_at=expires_at)
        raw = token.set_new_secret()
        token.save()
        return token, raw


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    digest = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="First characters, to tell tokens apart.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Refused from this moment on; empty: never expires.")
    # A revoked token is kept (refused) so the list and the audit log can still name it.
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    objects = ApiTokenManager()

    def __str__(self) -> str:
        return f"{self.hint}… ({self.user})"

    def set_new_secret(self) -> str:
        """Give this (unsaved) token a fresh secret; returns its only plaintext copy."""
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.digest = hash_token(raw)
        self.hint = raw[:8]
        return raw

    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.is_expired() else "active"
