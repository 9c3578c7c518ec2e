from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HTMX_STOP_POLLING

from apps.common.errors import DomainError
from apps.experiments import services
from apps.experiments.models import Experiment
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.ops.ui_errors import field_messages
from apps.ops.ui_input import posted_id

_NUMBERS = ("scale", "clients", "duration", "checkpoint_every")


@login_required
def experiment_list(request):
    experiments = Experiment.objects.select_related("host", "operation") \
        .defer("host__facts", "operation__state")[:100]
    return render(request, "experiments/list.html", {
        "experiments": experiments, "templates": services.templates(),
        "hosts": Host.objects.defer("facts").order_by("name")})


@login_required
def experiment_detail(request, pk: int):
    exp = get_object_or_404(Experiment.objects.select_related("host", "operation",
                                                               "script_version__script"), pk=pk)
    context = {"exp": exp, "operation": exp.operation, "runs": exp.runs.all(),
               "results": services.results(exp)}
    context["charts"] = [(f"exp-{exp.pk}-chart-{i}", chart)
                         for i, chart in enumerate(context["results"]["charts"])]
    if request.htmx:
        status = 200 if exp.is_active else HTMX_STOP_POLLING
        return render(request, "experiments/_live.html", context, status=status)
    return render(request, "experiments/detail.html", context)


def _form_spec(post) -> dict:
    workload: dict = {}
    for name in _NUMBERS:
        if value := post.get(name, "").strip():
            workload[name] = int(value) if value.isascii() and value.isdecimal() else value
    spec: dict = {"template": post.get("template", ""), "workload": workload,
                  "acknowledged": post.get("acknowledged") == "on"}
    if values := post.get("values", "").strip():
        spec["values"] = [v.strip() for v in values.split(",") if v.strip()]
    if reps := post.get("repetitions", "").strip():
        spec["repetitions"] = int(reps) if reps.isascii() and reps.isdecimal() else reps
    return spec


@login_required
@require_POST
def create(request):
    try:
        host = get_object_or_404(Host, pk=posted_id(request.POST, "host"))
        exp = services.create_experiment(host, None, _form_spec(request.POST), by=request.user,
                                         trigger=Operation.Trigger.UI)
    except DomainError as exc:
        if not exc.fields:
            messages.error(request, exc.message)
        for field, problem in field_messages(exc.fields or {}):
            messages.error(request, f"{field.removeprefix('workload.')}: {problem}")
        return redirect("experiments:list")
    return redirect("experiments:experiment", exp.pk)


@login_required
@require_POST
def cancel(request, pk: int):
    exp = get_object_or_404(Experiment.objects.select_related("operation"), pk=pk)
    services.cancel_experiment(exp, by=request.user)
    return redirect("experiments:experiment", exp.pk)
