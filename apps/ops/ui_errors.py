"""How the UI shows a refused request (a DomainError): one place for every page.

A view with a form puts the error on the form (`on_form`); any other view lets
the error propagate and `DomainErrorMiddleware` turns it into a message on the
page the operator came from, so a refusal is never a 500. A button on another
page (a host's tab, a plan) posts a form the view reads with `cleaned`, which
refuses its errors the same way, and may name the page its refusals go back to
(`back_on_refusal`). Either way the audit log sees the refusal
(apps.common.errors.note_refusal).
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import NON_FIELD_ERRORS
from django.shortcuts import redirect, resolve_url
from django.utils.http import url_has_allowed_host_and_scheme

from apps.common.errors import DomainError, note_refusal


def field_messages(fields: dict | None, prefix: str = "") -> list[tuple[str, str]]:
    """(field, message) pairs from nested fields such as {"params": {"scale": [...]}}."""
    pairs: list[tuple[str, str]] = []
    for name, value in (fields or {}).items():
        label = f"{prefix}{name}"
        if isinstance(value, dict):
            pairs.extend(field_messages(value, f"{label}."))
        else:
            items = value if isinstance(value, list) else [value]
            pairs.extend((label, str(item)) for item in items)
    return pairs


def on_form(form, exc: DomainError) -> None:
    """The error beside the fields it names, or above the form."""
    note_refusal(exc)
    named = False
    for name, text in field_messages(exc.fields):
        if name in form.fields:
            form.add_error(name, text)
            named = True
    if not named:
        form.add_error(None, exc.message)


def cleaned(form: forms.Form) -> dict:
    """The posted form's values, or its errors raised as a refusal naming the fields (for
    a form drawn on another page, which the middleware brings the operator back to)."""
    if form.is_valid():
        return form.cleaned_data
    fields = {name: list(errors) for name, errors in form.errors.items()}
    text = "; ".join(" ".join(errors) if name == NON_FIELD_ERRORS
                     else f"{name}: {' '.join(errors)}" for name, errors in fields.items())
    raise DomainError(f"refused: {text}", fields=fields)


def back_on_refusal(request, to: str, *args) -> None:
    """A refusal of this request goes back to `to` (a URL name and its arguments), the
    page the form is drawn on, even when the browser sends no Referer."""
    request.back_on_refusal = resolve_url(to, *args)


def flash(request, exc: DomainError) -> None:
    messages.error(request, exc.message)


class DomainErrorMiddleware:
    """Outside /api/: a refused request goes back where it came from, with the reason."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exc):
        if not isinstance(exc, DomainError) or request.path.startswith("/api/"):
            return None
        flash(request, exc)
        if back := getattr(request, "back_on_refusal", ""):
            return redirect(back)
        back = request.META.get("HTTP_REFERER", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()},
                                               require_https=request.is_secure()):
            back = "/"
        return redirect(back)
