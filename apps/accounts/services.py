"""API tokens managed by their users: list, issue, revoke.

A token carries its owner's rights and nothing more (authentication returns
the owner). Everyone manages their own tokens; operators see and revoke any.
Who else's a user manages (a tenant admin: its tenant's members') is for the
apps that group users to say: each appends to TOKEN_MANAGERS in its
AppConfig.ready() (apps.tenants does), so accounts imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.accounts.models import ApiToken
from apps.accounts.roles import is_operator
from apps.common.errors import DomainError

# Each gives, for a user who is not an operator, the accounts (a queryset of
# users) whose tokens that user may list and revoke besides its own.
TOKEN_MANAGERS: list[Callable[[object], QuerySet]] = []


class TokenError(DomainError):
    code = "token_refused"


def visible_to(user) -> QuerySet[ApiToken]:
    """The tokens `user` may list and revoke; anything else is not found (404)."""
    tokens = ApiToken.objects.select_related("user", "revoked_by").order_by("-created_at", "-pk")
    if is_operator(user):
        return tokens
    allowed = Q(user=user)
    for managed_users in TOKEN_MANAGERS:
        allowed |= Q(user__in=managed_users(user))
    return tokens.filter(allowed)


def issue(owner, name: str, expires_at: datetime | None) -> tuple[ApiToken, str]:
    """A new token of `owner`'s; the plaintext is returned once and never stored."""
    name = (name or "").strip()
    if len(name) > 100 or not name.isprintable():
        raise TokenError("name: at most 100 printable characters.",
                         fields={"name": ["at most 100 printable characters"]})
    if expires_at is not None and expires_at <= timezone.now():
        raise TokenError("expires_at: give a moment in the future, or none for a token "
                         "that never expires.", fields={"expires_at": ["in the past"]})
    return ApiToken.objects.issue(owner, name, expires_at=expires_at)


def revoke(token: ApiToken, by) -> ApiToken:
    """Refused from now on; revoking a revoked token changes nothing."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.revoked_by = by
        token.save(update_fields=["revoked_at", "revoked_by"])
    return token
