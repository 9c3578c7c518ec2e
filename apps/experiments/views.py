from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HTMX_STOP_POLLING

from apps.experiments import services
from apps.experiments.forms import NewExperimentForm
from apps.experiments.models import Experiment
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.ops.ui_errors import back_on_refusal, cleaned


@login_required
def experiment_list(request) -> HttpResponse:
    experiments = Experiment.objects.select_related("host", "operation") \
        .defer("host__facts", "operation__state")[:100]
    return render(request, "experiments/list.html", {
        "experiments": experiments, "templates": services.templates(),
        "hosts": Host.objects.defer("facts").order_by("name")})


@login_required
def experiment_detail(request, pk: int) -> HttpResponse:
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


@login_required
@require_POST
def create(request) -> HttpResponse:
    back_on_refusal(request, "experiments:list")
    form = NewExperimentForm(request.POST)
    host = cleaned(form)["host"]
    exp = services.create_experiment(host, None, form.spec(), by=request.user,
                                     trigger=Operation.Trigger.UI)
    return redirect("experiments:experiment", exp.pk)


@login_required
@require_POST
def cancel(request, pk: int) -> HttpResponse:
    exp = get_object_or_404(Experiment.objects.select_related("operation"), pk=pk)
    services.cancel_experiment(exp, by=request.user)
    return redirect("experiments:experiment", exp.pk)
