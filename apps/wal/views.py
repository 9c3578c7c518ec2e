"""The WAL archiving pages (operators): the plan of enabling or disabling, then its
operation. Thin: each view reads its form and calls one service; a refusal goes beside
the form's fields."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from apps.common.errors import DomainError
from apps.fleet.models import PgCluster
from apps.ops.models import Operation
from apps.ops.ui_errors import on_form
from apps.wal import services
from apps.wal.forms import EnableForm
from apps.wal.models import WalArchive


@login_required
def enable(request, cluster_pk: int) -> HttpResponse:
    """GET: the plan for the timeout asked (?archive_timeout=); POST: start it."""
    cluster = get_object_or_404(PgCluster.objects.select_related("host", "data_dataset"),
                                pk=cluster_pk)
    form = EnableForm(request.POST or request.GET or None)
    plan, timeout = None, 60
    if form.is_bound and form.is_valid():
        timeout = form.cleaned_data["archive_timeout"]
        try:
            if request.method == "POST":
                archive, operation = services.enable(cluster, timeout, by=request.user,
                                                     trigger=Operation.Trigger.UI)
                request.audit_operation = operation.pk
                return redirect("ops:operation", operation.pk)
            plan = services.plan_enable(cluster, timeout)
        except DomainError as exc:
            on_form(form, exc)
    refusal = None
    if not form.is_bound:
        form = EnableForm(initial={"archive_timeout": timeout})
        try:
            plan = services.plan_enable(cluster)
        except DomainError as exc:
            refusal = exc.message  # an unbound form takes no errors: said on the page
    return render(request, "wal/enable.html", {"cluster": cluster, "host": cluster.host,
                                               "form": form, "plan": plan,
                                               "timeout": timeout, "refusal": refusal})


@login_required
def disable(request, pk: int) -> HttpResponse:
    """GET: the plan (the settings from before come back); POST: start it."""
    archive = get_object_or_404(WalArchive.objects.select_related("cluster__host"), pk=pk)
    error = None
    if request.method == "POST":
        try:
            operation = services.disable(archive, by=request.user, trigger=Operation.Trigger.UI)
        except DomainError as exc:
            error = str(exc)
        else:
            request.audit_operation = operation.pk
            return redirect("ops:operation", operation.pk)
    return render(request, "wal/disable.html", {
        "archive": archive, "host": archive.cluster.host, "error": error,
        "plan": services.plan_disable(archive) if archive.before else None})


@login_required
@require_POST
def refresh_command(request, pk: int) -> HttpResponse:
    """Write PoZoL's current archive_command (a reload); a refusal goes back to the page."""
    archive = get_object_or_404(WalArchive, pk=pk)
    operation = services.refresh_command(archive, by=request.user,
                                         trigger=Operation.Trigger.UI)
    request.audit_operation = operation.pk
    return redirect("ops:operation", operation.pk)
