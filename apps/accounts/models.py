"""API tokens, stored hashed: a leaked database does not leak working tokens."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models

TOKEN_PREFIX = "pzl_"  # noqa: S105  a visible prefix, not a secret


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiTokenManager(models.Manager["ApiToken"]):
    def issue(self, user, name: str = "") -> tuple[ApiToken, str]:
        """Create a token and return it with its only plaintext copy."""
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = self.create(user=user, name=name, digest=hash_token(raw), hint=raw[:8])
        return token, raw


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    digest = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="First characters, to tell tokens apart.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenManager()

    def __str__(self) -> str:
        return f"{self.hint}… ({self.user})"
