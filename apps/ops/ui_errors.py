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


def cleaned(form: forms.Form, *names: str) -> dict:
    """The posted form's values once the fields `names` (every field when none) are valid,
    else a refusal naming the first field at fault (for a form drawn on another page, which
    the middleware brings the operator back to). `names` lets a view check one field, look
    its object up, and only then read the others."""
    form.is_valid()
    for name in names or form.fields:
        if name in form.errors:
            error = form.errors.as_data()[name][0]
            text = error.messages[0]
            raise DomainError(f"{name}: {text}", code=error.code or "invalid",
                              fields={name: [text]})
    if not names and form.non_field_errors():
        raise DomainError(form.non_field_errors()[0])
    return form.cleaned_data


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
