"""The drill pages: the fleet's runs, a run's detail, and the host tab's buttons (add a
schedule, run one now, remove one, look for orphan clones). Thin: one service each."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from apps.common.errors import DomainError
from apps.drills import queries, services, table_recovery
from apps.drills import reconcile as reconciler
from apps.drills.forms import RecoverTableForm, ScheduleForm
from apps.drills.models import DrillSchedule
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.ops.ui_errors import on_form
from apps.snapshots.models import Snapshot

FLEET_RUNS = 200


@login_required
def fleet(request) -> HttpResponse:
    return render(request, "drills/list.html", {"runs": queries.runs()[:FLEET_RUNS],
                                                "schedules": queries.schedules()})


@login_required
def run_detail(request, pk: int) -> HttpResponse:
    return render(request, "drills/run.html", {"run": get_object_or_404(queries.runs(), pk=pk)})


@login_required
def new_schedule(request, host_pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=host_pk)
    form = ScheduleForm(host, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.save_schedule(**form.target(host),
                                   interval_hours=form.cleaned_data["interval_hours"],
                                   check_query=form.cleaned_data["check_query"],
                                   target=form.cleaned_data["restore"],
                                   by=request.user)
        except DomainError as exc:
            on_form(form, exc)
        else:
            messages.success(request, "Drill schedule saved: its first drill runs at the "
                                      "next tick.")
            return redirect("fleet:host_section", host.pk, "drills")
    return render(request, "drills/new.html", {"host": host, "form": form})


@login_required
@require_POST
def run_now(request, pk: int) -> HttpResponse:
    schedule = get_object_or_404(DrillSchedule, pk=pk)
    run = services.run_now(schedule, by=request.user, trigger=Operation.Trigger.UI)
    if run.operation_id:
        return redirect("ops:operation", run.operation_id)
    return redirect("drills:run", run.pk)


@login_required
@require_POST
def delete_schedule(request, pk: int) -> HttpResponse:
    schedule = get_object_or_404(DrillSchedule, pk=pk)
    services.delete_schedule(schedule)
    messages.success(request, f"Drill schedule of {schedule.source_label} removed; its runs "
                              "stay in the history.")
    return redirect("fleet:host_section", schedule.host_id, "drills")


@login_required
@require_POST
def reconcile(request, host_pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=host_pk)
    operation = reconciler.reconcile(host, by=request.user, trigger=Operation.Trigger.UI)
    return redirect("ops:operation", operation.pk)


@login_required
def recover_table(request, host_pk: int) -> HttpResponse:
    """GET: the form; POST: start the recovery (from a snapshot or as of a moment) and
    follow its operation."""
    host = get_object_or_404(Host, pk=host_pk)
    form = RecoverTableForm(host, request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        names = {"database": data["database"], "table": data["table"],
                 "into": data["into"] or None, "by": request.user,
                 "trigger": Operation.Trigger.UI}
        try:
            if data["snapshot"]:
                snapshot = get_object_or_404(Snapshot, pk=int(data["snapshot"]), host=host)
                operation = table_recovery.recover_table(snapshot, **names)
            else:
                operation = table_recovery.recover_table_at(data["cluster"], at=data["at"],
                                                            **names)
        except DomainError as exc:
            on_form(form, exc)
        else:
            request.audit_operation = operation.pk
            return redirect("ops:operation", operation.pk)
    return render(request, "drills/recover_table.html", {"host": host, "form": form})
