"""The clone pages: make a clone (then its password, on a page shown once), reset and
destroy one, and a host's clone settings. Operators list a host's clones on its Clones tab
(apps.clones.host_page); a tenant's members have their own pages here (their
clusters, each one's snapshots, their clones), scoped by apps.clones.tenancy:
another tenant's clone or cluster is not found.

Thin: each view reads its form and calls one service. A refusal on a form goes
beside its fields; a refused button (destroying a protected clone) goes back to
the page as a message (apps.ops.ui_errors' middleware).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST, require_safe

from apps.accounts.roles import is_operator, members_allowed
from apps.clones import services, tenancy
from apps.clones.forms import (
    CloneSettingsForm,
    ClusterCloneForm,
    NewCloneForm,
    ResetForm,
    TargetCloneForm,
)
from apps.clones.models import Clone
from apps.common.errors import DomainError
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.ops.ui_errors import on_form
from apps.tenants import services as services_tenants
from apps.wal import services as wal_services


def _host(pk: int) -> Host:
    return get_object_or_404(Host.objects.prefetch_related("clusters__data_dataset"), pk=pk)


@login_required
@never_cache
def new(request, host_pk: int) -> HttpResponse:
    """The form (GET), or make the clone and send the browser to its password page
    (POST-redirect-GET, so a refresh never makes a second clone)."""
    host = _host(host_pk)
    form = NewCloneForm(host, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            clone, operation, _ = services.create_clone(
                host, form.cleaned_data["cluster"], **form.request(), by=request.user,
                trigger=Operation.Trigger.UI)
        except DomainError as exc:
            on_form(form, exc)
        else:
            request.audit_created, request.audit_operation = clone, operation.pk
            return _to_password_once(request, clone)
    return render(request, "clones/new.html", {"host": host, "form": form})


@login_required
@never_cache
def on_target(request, host_pk: int) -> HttpResponse:
    """The form that makes a clone on this host, a replication target, of a link's source
    cluster as of a moment, beside each link's window (GET; `?link=` picks one), or make
    it and send the browser to its password page. Operators only: links are theirs."""
    host = _host(host_pk)
    initial = {"link": request.GET.get("link")} if request.GET.get("link", "").isdigit() \
        else {}
    form = TargetCloneForm(host, request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            clone, operation, _ = services.create_on_target(
                form.cleaned_data["link"], **form.request(), by=request.user,
                trigger=Operation.Trigger.UI)
        except DomainError as exc:
            on_form(form, exc)
        else:
            request.audit_created, request.audit_operation = clone, operation.pk
            return _to_password_once(request, clone)
    return render(request, "clones/on_target.html", {
        "host": host, "target_form": form, "copies": services.copies_on(host)})


# The clones whose password this session may see once: their ids only. The password
# itself stays where it already is, encrypted in the clone's row; it is never put in
# the session, a message or a URL.
SHOW_ONCE = "clones_password_once"


def _to_password_once(request, clone: Clone) -> HttpResponse:
    request.session[SHOW_ONCE] = [*request.session.get(SHOW_ONCE, []), clone.pk][-20:]
    return redirect("clones:password", clone.pk)


@members_allowed
@login_required
@never_cache
@require_safe
def password(request, pk: int) -> HttpResponse:
    """The password of a clone this session has just made, shown once: the first GET
    takes the clone off the session's list, so a refresh, the back button or another
    browser finds it gone (and no form is resubmitted)."""
    clone = get_object_or_404(tenancy.visible_clones(request.user), pk=pk)
    pending = request.session.get(SHOW_ONCE, [])
    shown = pk in pending
    if shown:
        request.session[SHOW_ONCE] = [other for other in pending if other != pk]
    return render(request, "clones/created.html", {
        "host": clone.host if is_operator(request.user) else None, "clone": clone,
        "operation": clone.last_operation,
        "password": clone.decrypted_password() if shown else None,
        "connection": _connection(clone)})


def _connection(clone: Clone) -> str:
    """Where the clone answers: planned by the layout its creation stored (a row made
    otherwise has none: then what the clone reported once ready, if anything)."""
    return clone.decoded_layout().connection_string() if clone.layout \
        else clone.connection_string


@members_allowed
@login_required
@require_POST
def destroy(request, pk: int) -> HttpResponse:
    clone = get_object_or_404(tenancy.visible_clones(request.user), pk=pk)
    operation = services.destroy_clone(clone, by=request.user, trigger=Operation.Trigger.UI)
    request.audit_operation = operation.pk
    messages.success(request, f"Clone {clone.name} is being destroyed: its PostgreSQL stops "
                              "and its datasets go.")
    if is_operator(request.user):
        return redirect("ops:operation", operation.pk)
    return redirect("clones:clone", clone.pk)


@members_allowed
@login_required
@require_POST
def reset(request, pk: int) -> HttpResponse:
    clone = get_object_or_404(tenancy.visible_clones(request.user), pk=pk)
    form = ResetForm(request.POST)
    snapshot = (form.cleaned_data["snapshot"] or None) if form.is_valid() else None
    operation = services.reset_clone(clone, snapshot=snapshot, by=request.user,
                                     trigger=Operation.Trigger.UI)
    request.audit_operation = operation.pk
    messages.success(request, f"Clone {clone.name} is being reset: same name, port and "
                              "password, fresh data.")
    return redirect("clones:clone", clone.pk)


# ---- the customer's pages (operators see every tenant's) -------------------------------

@members_allowed
@login_required
@require_safe
def mine(request) -> HttpResponse:
    """Your tenant's clusters and clones, and what they take of its quotas."""
    if not tenancy.may_use_clones(request.user):
        raise PermissionDenied("Clones are for operators and the members of a tenant.")
    membership = services_tenants.membership_of(request.user)
    tenant = membership.tenant if membership else None
    clones = tenancy.visible_clones(request.user).exclude(state=Clone.State.DESTROYED)
    assignments = services_tenants.with_clusters(tenancy.visible_assignments(request.user))
    return render(request, "clones/mine.html", {
        "tenant": tenant, "usage": tenancy.usage(tenant) if tenant else None,
        "clusters": assignments,
        "clones": clones.order_by("-created_at")[:500]})


@members_allowed
@login_required
@never_cache
def cluster(request, pk: int) -> HttpResponse:
    """One of your clusters: its snapshots and the form that makes a clone (POST: off to
    the clone's password page, shown once)."""
    assignment = get_object_or_404(tenancy.visible_assignments(request.user), pk=pk)
    origin = tenancy.cluster_of(assignment)
    snapshots = list(tenancy.snapshots_of(origin)[:200])
    form = ClusterCloneForm(snapshots, request.POST or None)
    if request.method == "POST" and origin is None:
        form.add_error(None, "Discovery has not found this cluster on its host (not yet, "
                             "or it was retired).")
    elif request.method == "POST" and form.is_valid():
        try:
            made, operation, _ = services.create_clone(
                origin.host, origin, **form.request(), by=request.user,
                trigger=Operation.Trigger.UI)
        except DomainError as exc:
            on_form(form, exc)
        else:
            request.audit_created, request.audit_operation = made, operation.pk
            return _to_password_once(request, made)
    clones = tenancy.visible_clones(request.user).filter(
        host_id=assignment.host_id, cluster_data_dir=assignment.cluster_data_dir).exclude(
        state=Clone.State.DESTROYED)
    return render(request, "clones/cluster.html", {
        "assignment": assignment, "cluster": origin, "snapshots": snapshots, "form": form,
        "clones": clones, "archive": wal_services.archive_of(origin) if origin else None})


@members_allowed
@login_required
@require_safe
def clone(request, pk: int) -> HttpResponse:
    """One clone: its state and its last operation's progress, live (htmx asks this page
    again every second while the operation runs and swaps in the part that changes)."""
    shown = get_object_or_404(tenancy.visible_clones(request.user), pk=pk)
    context = {"clone": shown, "operation": shown.last_operation}
    if request.headers.get("HX-Request"):
        return render(request, "clones/_live.html", context)
    return render(request, "clones/clone.html", context)


@login_required
def host_settings(request, host_pk: int) -> HttpResponse:
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
