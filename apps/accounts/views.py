"""Everyone's own API tokens (and those they may revoke): the page and its revoke."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from apps.accounts import services
from apps.accounts.forms import TokenForm
from apps.accounts.roles import members_allowed
from apps.common.errors import DomainError
from apps.ops.ui_errors import on_form


@members_allowed
@login_required
def token_list(request) -> HttpResponse:
    """Your tokens (and those you may revoke); a new one is shown once, on this answer."""
    form = TokenForm(request.POST or None)
    issued = None
    if request.method == "POST" and form.is_valid():
        days = form.cleaned_data["expires_in_days"]
        expires_at = timezone.now() + timedelta(days=days) if days else None
        try:
            issued = services.issue(request.user, form.cleaned_data["name"], expires_at)
        except DomainError as exc:
            on_form(form, exc)
        else:
            form = TokenForm()
    response = render(request, "accounts/tokens.html", {
        "form": form, "issued": issued, "tokens": services.visible_to(request.user)})
    if issued:
        response["Cache-Control"] = "no-store"
    return response


@members_allowed
@login_required
@require_POST
def token_revoke(request, pk: int) -> HttpResponse:
    token = get_object_or_404(services.visible_to(request.user), pk=pk)
    services.revoke(token, by=request.user)
    messages.success(request, f"Token {token.name or token.hint} revoked.")
    return redirect("accounts:tokens")
