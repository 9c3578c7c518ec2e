"""Every request that asks to change something is written to the audit log, here.

Unsafe methods (POST, PUT, PATCH, DELETE) on pages and the API, whatever view
answers them, old or new: who (the session's user, or the API token and its
owner), the view, the object its URL names (read before the view runs, so a
deleted object keeps its name), the address, what was sent (secrets left out)
and the outcome: a 2xx/3xx is a success, a refusal (a DomainError, a 4xx, a form
answered with its errors) is refused with its message, a 5xx failed. A token
refused with a 401 is written whatever the method. Sign-in and sign-out come
from Django's signals (apps/audit/signals.py).
"""

from __future__ import annotations

from apps.accounts.models import ApiToken
from apps.accounts.roles import is_operator
from apps.accounts.throttling import client_ip
from apps.audit import services, subjects
from apps.audit.models import AuditEvent
from apps.common import errors

UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
# Written by the auth signals instead, with the user name tried.
SKIPPED = {"login", "logout"}
Outcome = AuditEvent.Outcome


class AuditMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        noted = errors.REFUSAL.set(None)
        try:
            response = self.get_response(request)
            if self._audited(request, response):
                self._record(request, response)
        finally:
            errors.REFUSAL.reset(noted)
        return response

    def process_view(self, request, view_func, args, kwargs):
        if request.method in UNSAFE:
            request.audit_subject = subjects.load(*subjects.of_path(request.path_info))
        return None

    def process_exception(self, request, exc):
        if isinstance(exc, errors.DomainError):
            errors.note_refusal(exc)
        return None

    @staticmethod
    def _audited(request, response) -> bool:
        match = getattr(request, "resolver_match", None)
        if match is not None and match.view_name in SKIPPED:
            return False
        if response.status_code == 401 and "HTTP_AUTHORIZATION" in request.META:
            return True
        return request.method in UNSAFE

    def _record(self, request, response) -> None:
        outcome, message = _outcome(request, response)
        token = getattr(request, "auth", None)
        token = token if isinstance(token, ApiToken) else None
        subject = getattr(request, "audit_subject", None) or subjects.Subject()
        _created(subject, request, response)
        if outcome != Outcome.SUCCESS and not is_operator(request.user):
            # A refused member learns nothing from the log: not the name of an object
            # it may not see, nor (through another tenant's log) its own name there.
            subject.text, subject.tenant_id = "", None
        if response.status_code == 401 and "HTTP_AUTHORIZATION" in request.META:
            message = f"{message} (token starting {_presented_hint(request)})"
        details = _sent(request, response)
        if started := getattr(request, "audit_operation", None) or _operation_started(response):
            details["started operation"] = started
        services.record(
            action=_action(request, response), outcome=outcome, user=request.user,
            token=token, subject=subject, address=client_ip(request), method=request.method,
            path=request.path, status_code=response.status_code, message=message,
            details=details)


def _presented_hint(request) -> str:
    """The first characters of the token sent: what the tokens list shows, no secret."""
    _, _, raw = request.META["HTTP_AUTHORIZATION"].partition(" ")
    return raw.strip()[:8].encode("ascii", "replace").decode() + "…"


def _action(request, response) -> str:
    if response.status_code == 401 and "HTTP_AUTHORIZATION" in request.META:
        return "token refused"
    match = getattr(request, "resolver_match", None)
    return match.view_name if match is not None else "unrouted"


def _outcome(request, response) -> tuple[str, str]:
    refusal = errors.REFUSAL.get()
    if response.status_code >= 500:
        return Outcome.FAILED, _api_message(response) or "the server failed to answer"
    if refusal is not None:
        return Outcome.REFUSED, refusal.message
    if response.status_code >= 400:
        return Outcome.REFUSED, _api_message(response) or response.reason_phrase
    if _form_refused(request, response):
        return Outcome.REFUSED, "the form was answered with errors"
    return Outcome.SUCCESS, ""


def _api_message(response) -> str:
    data = getattr(response, "data", None)
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        return str(data["error"].get("message", ""))
    return ""


def _form_refused(request, response) -> bool:
    """A page that answers a form with the form again, its errors listed (Django's
    `errorlist`), refused it; a success redirects or shows its result."""
    if request.path.startswith("/api/") or response.status_code != 200 or response.streaming:
        return False
    return b'class="errorlist' in response.content


def _created(subject: subjects.Subject, request, response) -> None:
    """A new object has no id in the request: take it from the answer, or from what the
    view noted (`request.audit_created`)."""
    noted = getattr(request, "audit_created", None)
    if noted is not None and response.status_code < 400:
        # A page that answers with what it made (a clone and its password), not a redirect.
        found = subjects.load(noted._meta.label, str(noted.pk))
        subject.type, subject.id, subject.text = found.type, found.id, found.text
        subject.tenant_id = found.tenant_id or subject.tenant_id
        return
    if subject.id or response.status_code >= 400:
        return
    data = getattr(response, "data", None)
    if isinstance(data, dict) and isinstance(data.get("clone"), dict):
        data = data["clone"]  # a clone's creation answers with the clone and its operation
    if isinstance(data, dict) and isinstance(data.get("id"), int):
        subject.id = str(data["id"])
        subject.text = str(data.get("name") or data.get("username") or "")[:300]
        # The tenant of what was made (a membership, a clone), so an operator's work on
        # a tenant shows in that tenant's log.
        label, _ = subjects.of_path(request.path_info)
        subject.tenant_id = subject.tenant_id or subjects.load(label, subject.id).tenant_id
        return
    location = response.get("Location", "")
    label, object_id = subjects.of_path(location)
    if object_id and label.rpartition(".")[2].lower() == subject.type:
        found = subjects.load(label, object_id)
        subject.id, subject.text = found.id, found.text
        subject.tenant_id = subject.tenant_id or found.tenant_id


def _operation_started(response) -> int | None:
    """The Operation a request started (its answer, or the page it redirects to): the
    entry records the asking, the operation's own log how the work ended."""
    data = getattr(response, "data", None)
    if isinstance(data, dict):
        operation = data.get("operation") if isinstance(data.get("operation"), dict) else data
        if {"kind", "status", "id"} <= set(operation) and isinstance(operation["id"], int):
            return operation["id"]
    label, object_id = subjects.of_path(response.get("Location", ""))
    return int(object_id) if label == "ops.Operation" and object_id else None


def _sent(request, response) -> dict:
    drf_request = (getattr(response, "renderer_context", None) or {}).get("request")
    if drf_request is not None:
        try:
            data = drf_request.data
        except Exception:  # noqa: BLE001  a body the API refused to parse is no detail
            return {}
        # A list (or any other JSON) body is redacted like a form: its dicts lose
        # their secret keys.
        return dict(data) if isinstance(data, dict) else {"body": data}
    if request.method == "POST":
        return {key: (values if len(values) > 1 else values[0])
                for key, values in request.POST.lists()}
    return {}
