"""Sign-in, failed sign-in and sign-out, written to the audit log as they happen."""

from __future__ import annotations

from django.contrib.auth import signals

from apps.accounts.throttling import client_ip
from apps.audit import services
from apps.audit.models import AuditEvent


def signed_in(sender, request, user, **kwargs) -> None:
    services.record(action="sign-in", outcome=AuditEvent.Outcome.SUCCESS, user=user,
                    address=_address(request), method="POST", path=_path(request))


def signed_out(sender, request, user, **kwargs) -> None:
    services.record(action="sign-out", outcome=AuditEvent.Outcome.SUCCESS, user=user,
                    address=_address(request), method="POST", path=_path(request))


def sign_in_failed(sender, credentials, request=None, **kwargs) -> None:
    services.record(action="sign-in", outcome=AuditEvent.Outcome.REFUSED,
                    username=str(credentials.get("username", ""))[:150],
                    address=_address(request), method="POST", path=_path(request),
                    message="wrong user name or password, or locked out")


def _address(request) -> str:
    return client_ip(request) if request is not None else ""


def _path(request) -> str:
    return request.path if request is not None else ""


def connect() -> None:
    signals.user_logged_in.connect(signed_in, dispatch_uid="audit.sign-in")
    signals.user_logged_out.connect(signed_out, dispatch_uid="audit.sign-out")
    signals.user_login_failed.connect(sign_in_failed, dispatch_uid="audit.sign-in-failed")
