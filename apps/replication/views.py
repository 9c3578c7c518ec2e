"""The Replication pages: every link of the fleet, a new link, and one link with its
settings, its actions and its recent runs.

Thin: each view reads its form and calls one service. A refusal on a form goes
beside its fields; a refused button (a run already going, say) goes back to the
page as a message (apps.ops.ui_errors' middleware).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HTMX_STOP_POLLING

from apps.common.errors import Conflict, DomainError
from apps.ops.models import Operation
from apps.replication import queries, services, steps
from apps.replication.forms import LinkSettingsForm, NewLinkForm, refused
from apps.replication.models import ReplicationLink

RECENT_RUNS = 20


@login_required
def link_list(request) -> HttpResponse:
    links = queries.shown(queries.for_table())
    context = {"links": links,
               "polling": any(link.running_operation_id for link in links)}
    if request.htmx and request.htmx.target == "links-live":
        status = 200 if context["polling"] else HTMX_STOP_POLLING
        return render(request, "replication/_links_live.html", context, status=status)
    return render(request, "replication/list.html", context)


@login_required
def link_new(request) -> HttpResponse:
    form = NewLinkForm(request.POST or None, source_host=request.GET.get("source_host"))
    if request.method == "POST" and form.is_valid():
        try:
            link = services.create_link(**form.identity(), **form.changes(), by=request.user)
        except DomainError as exc:
            refused(form, exc)
        else:
            messages.success(request, f"Link {link.name} made: it runs "
                             f"{_schedule(link)}, or now with Run now.")
            return redirect("replication:link", link.pk)
    return render(request, "replication/new.html", {"form": form})


def _schedule(link: ReplicationLink) -> str:
    if link.interval_minutes:
        return f"every {link.interval_minutes} min"
    return "after each policy snapshot" if link.after_policy else "on demand only"


@login_required
def link_detail(request, pk: int) -> HttpResponse:
    link = get_object_or_404(queries.for_table(), pk=pk)
    link = queries.shown([link])[0]
    if request.htmx and request.htmx.target == "link-live":
        status = 200 if link.running_operation_id else HTMX_STOP_POLLING
        return render(request, "replication/_link_live.html", {"link": link}, status=status)
    try:  # before the form is checked: a bound ModelForm writes its values on `link`
        streams, streams_unknown = services.streams_of(link), ""
    except Conflict as exc:
        streams, streams_unknown = [], exc.message
    form = LinkSettingsForm(request.POST or None, instance=link)
    if request.method == "POST" and form.is_valid():
        try:
            services.update_link(link, form.changes(), by=request.user)
        except DomainError as exc:
            refused(form, exc)
        else:
            messages.success(request, f"Settings of {link.name} saved.")
            return redirect("replication:link", link.pk)
    runs = (Operation.objects.filter(kind=steps.RUN.name, state__link=link.pk)
            .for_table()[:RECENT_RUNS])
    return render(request, "replication/detail.html",
                  {"link": link, "form": form, "runs": runs, "recent_runs": RECENT_RUNS,
                   "streams": streams, "streams_unknown": streams_unknown})


@login_required
@require_POST
def run(request, pk: int) -> HttpResponse:
    link = get_object_or_404(ReplicationLink, pk=pk)
    operation = services.run_now(link, by=request.user, trigger=Operation.Trigger.UI)
    return redirect("ops:operation", operation.pk)


@login_required
@require_POST
def delete(request, pk: int) -> HttpResponse:
    link = get_object_or_404(ReplicationLink, pk=pk)
    operation = services.delete_link(link, by=request.user, trigger=Operation.Trigger.UI)
    messages.success(request, f"Link {link.name} deleted; this operation removes its key "
                              "and holds from both hosts. What it received stays on the "
                              "target.")
    return redirect("ops:operation", operation.pk)


TOGGLES = {"pause": (services.pause, "paused: scheduled runs stop"),
           "resume": (services.resume, "resumed"),
           "opt-in": (services.opt_in_rollback,
                      "may now roll a diverged target back to the common snapshot"),
           "opt-out": (services.opt_out_rollback,
                       "refuses a diverged target again")}


@login_required
@require_POST
def toggle(request, pk: int, action: str) -> HttpResponse:
    link = get_object_or_404(ReplicationLink, pk=pk)
    change, said = TOGGLES[action]
    change(link, by=request.user)
    messages.success(request, f"Link {link.name} {said}.")
    return redirect("replication:link", link.pk)
