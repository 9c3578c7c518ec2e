"""Writing the audit log (one writer, `record`) and reading it (scoped per role)."""

from __future__ import annotations

import re

from django.db.models import QuerySet

from apps.accounts.models import ApiToken
from apps.accounts.roles import is_operator
from apps.audit.models import AuditEvent
from apps.audit.subjects import Subject
from apps.tenants.models import Membership, Tenant

# Inputs never written down: they are or carry secrets.
SECRET_WORDS = ("password", "private_key", "passphrase", "token", "secret", "csrf")
MAX_DETAIL_KEYS = 30
MAX_DETAIL_TEXT = 300
URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?:[^@/\s?#]*@)?(?P<host>[^/\s?#]*)"
                 r"[^\s]*")


def record(*, action: str, outcome: str, user=None, token: ApiToken | None = None,
           subject: Subject | None = None, address: str | None = "", method: str = "",
           path: str = "", status_code: int | None = None, message: str = "",
           details: dict | None = None, username: str = "") -> AuditEvent:
    """The one place an audit entry is written."""
    subject = subject or Subject()
    signed_in = user is not None and user.is_authenticated
    tenant_id = subject.tenant_id
    if tenant_id is not None and not Tenant.objects.filter(pk=tenant_id).exists():
        tenant_id = None  # the request deleted it; the entry keeps its name as the object
    if tenant_id is None and signed_in:
        tenant_id = Membership.objects.filter(user=user).values_list(
            "tenant_id", flat=True).first()
    return AuditEvent.objects.create(
        action=_text(action, 200), outcome=outcome,
        user=user if signed_in else None,
        username=_text(user.get_username() if signed_in else username, 150),
        token=token, token_hint=token.hint if token else "",
        tenant_id=tenant_id, address=_text(address, 64), method=_text(method, 8),
        path=_text(path, 500), object_type=_text(subject.type, 60),
        object_id=_text(subject.id, 40), object_text=_text(subject.text, 300),
        status_code=status_code, message=_text(message, 2000),
        details=redacted(details or {}))


def _text(value: str | None, limit: int) -> str:
    """Hostile input is recorded as sent, except NUL, which PostgreSQL text cannot hold."""
    return (value or "").replace("\x00", "\\0")[:limit]


def redacted(data: dict) -> dict:
    """What was sent, minus secrets, each value cut short: enough to say what was asked."""
    kept: dict = {}
    for key in list(data)[:MAX_DETAIL_KEYS]:
        name = _text(str(key), 60)
        if any(word in name.lower() for word in SECRET_WORDS):
            continue
        kept[name] = _short(data[key])
    return kept


def _short(value):
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_short(item) for item in list(value)[:MAX_DETAIL_KEYS]]
    if isinstance(value, dict):
        return redacted(value)
    # Cut first: the URL pattern on a long text (70,000 letters) backtracks for seconds.
    return _without_url_secrets(_text(str(value), MAX_DETAIL_TEXT))


def _without_url_secrets(text: str) -> str:
    """A URL keeps its scheme and host only: webhook URLs (Slack's) carry their secret
    in the path or query, and user:password may sit before the host."""
    return URL.sub(lambda m: f"{m['scheme']}://{m['host']}/…", text)


def visible_to(user) -> QuerySet[AuditEvent]:
    """Operators read everything; a tenant admin its tenant's part; others nothing."""
    events = AuditEvent.objects.all()
    if is_operator(user):
        return events
    admin_of = Membership.objects.filter(user=user, role=Membership.Role.TENANT_ADMIN)
    return events.filter(tenant__in=admin_of.values("tenant"))


def with_operations(events) -> list[AuditEvent]:
    """The events, each given `operation`: the Operation its request started (None when it
    started none, or the operation is purged), read in one query, so the log shows how
    the work ended, not only that it was asked for."""
    from apps.ops.models import Operation

    events = list(events)
    ids = {e.started_operation_id for e in events} - {None}
    found = Operation.objects.only("pk", "kind", "status", "error", "finished_at").in_bulk(ids)
    for event in events:
        event.operation = found.get(event.started_operation_id)
    return events
