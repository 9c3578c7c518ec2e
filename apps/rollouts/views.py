from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HTMX_STOP_POLLING

from apps.ops.models import Operation
from apps.ops.ui_errors import back_on_refusal, cleaned
from apps.rollouts import queries, services
from apps.rollouts.forms import NewRolloutForm


@login_required
def rollout_list(request) -> HttpResponse:
    rollouts = list(queries.rollouts()[:100])
    context = {"rollouts": rollouts, "form": NewRolloutForm(),
               "polling": any(rollout.is_active for rollout in rollouts)}
    if request.htmx:
        status = 200 if context["polling"] else HTMX_STOP_POLLING
        return render(request, "rollouts/_table.html", context, status=status)
    return render(request, "rollouts/list.html", context)


@login_required
def rollout_detail(request, pk: int) -> HttpResponse:
    rollout = get_object_or_404(queries.rollouts(), pk=pk)
    context = {"rollout": rollout, "operation": rollout.operation}
    if request.htmx:
        status = 200 if rollout.is_active else HTMX_STOP_POLLING
        return render(request, "rollouts/_live.html", context, status=status)
    return render(request, "rollouts/detail.html", context)


@login_required
@require_POST
def create(request) -> HttpResponse:
    back_on_refusal(request, "rollouts:list")
    data = cleaned(NewRolloutForm(request.POST))
    version = services.version_of(data["profile"], None)
    rollout = services.start_rollout(
        version, list(data["hosts"]), wave_size=data["wave_size"], canary=data["canary"],
        validation=data["validation"], pgbench_seconds=data["pgbench_seconds"],
        max_tps_drop_percent=data["max_tps_drop_percent"],
        rollback_earlier_waves=data["rollback_earlier_waves"],
        allow_restart=data["allow_restart"], trigger=Operation.Trigger.UI, by=request.user)
    return redirect("rollouts:rollout", rollout.pk)


@login_required
@require_POST
def pause(request, pk: int) -> HttpResponse:
    back_on_refusal(request, "rollouts:rollout", pk)
    services.pause(get_object_or_404(queries.rollouts(), pk=pk))
    return redirect("rollouts:rollout", pk)


@login_required
@require_POST
def resume(request, pk: int) -> HttpResponse:
    back_on_refusal(request, "rollouts:rollout", pk)
    services.resume(get_object_or_404(queries.rollouts(), pk=pk))
    return redirect("rollouts:rollout", pk)
