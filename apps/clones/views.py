"""The clone pages: make a clone (then its password, once), destroy one, and a host's
clone settings. The list is the host page's Clones tab (apps.clones.host_page).

Thin: each view reads its form and calls one service. A refusal on a form goes
beside its fields; a refused button (destroying a protected clone) goes back to
the page as a message (apps.ops.ui_errors' middleware).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from apps.clones import services
from apps.clones.forms import CloneSettingsForm, NewCloneForm
from apps.clones.models import Clone
from apps.fleet.models import Host
from apps.ops.errors import DomainError
from apps.ops.models import Operation
from apps.ops.ui_errors import on_form


def _host(pk: int) -> Host:
    return get_object_or_404(Host.objects.prefetch_related("clusters__data_dataset"), pk=pk)


@login_required
@never_cache
def new(request, host_pk: int):
    """The form (GET), or make the clone and show its password, this once (POST): the
    answer is rendered, not redirected to, so the password is in no URL, session or
    message store."""
    host = _host(host_pk)
    form = NewCloneForm(host, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            clone, operation, password = services.create_clone(
                host, form.cleaned_data["cluster"], **form.request(), by=request.user,
                trigger=Operation.Trigger.UI)
        except DomainError as exc:
            on_form(form, exc)
        else:
            return render(request, "clones/created.html",
                          {"host": host, "clone": clone, "operation": operation,
                           "password": password,
                           "connection": services.layout_of(clone).connection_string()})
    return render(request, "clones/new.html", {"host": host, "form": form})


@login_required
@require_POST
def destroy(request, pk: int):
    clone = get_object_or_404(Clone.objects.select_related("host"), pk=pk)
    operation = services.destroy_clone(clone, by=request.user, trigger=Operation.Trigger.UI)
    messages.success(request, f"Clone {clone.name} is being destroyed: its PostgreSQL stops "
                              "and its datasets go.")
    return redirect("ops:operation", operation.pk)


@login_required
def host_settings(request, host_pk: int):
    host = get_object_or_404(Host, pk=host_pk)
    form = CloneSettingsForm.of(services.settings_of(host), request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.update_settings(host, **form.values(), by=request.user)
        except DomainError as exc:
            on_form(form, exc)
        else:
            messages.success(request, f"Clone settings of {host.name} saved: the next clone "
                                      "gets them; existing clones keep theirs.")
            return redirect("fleet:host_section", host.pk, "clones")
    return render(request, "clones/settings.html", {"host": host, "form": form})
