from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HTMX_STOP_POLLING

from apps.benchmarks import services
from apps.benchmarks.forms import CompareForm, RunForm
from apps.benchmarks.models import Benchmark, Validation
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.ops.ui_errors import back_on_refusal, cleaned


@login_required
def benchmark_list(request) -> HttpResponse:
    # The list shows names and figures: never a host's facts (about 68 KB each), an
    # operation's step state or a run's per-second series.
    benchmarks = list(Benchmark.objects.select_related("host", "operation")
                      .defer("series", "host__facts", "operation__state")[:100])
    context = {"benchmarks": benchmarks,
               "polling": any(bench.is_active for bench in benchmarks)}
    if request.htmx and request.htmx.target == "benchmarks-live":
        # Only the runs refresh; validations are made by hand, from a finished run.
        status = 200 if context["polling"] else HTMX_STOP_POLLING
        return render(request, "benchmarks/_list_live.html", context, status=status)
    context["validations"] = (Validation.objects.select_related("host", "before", "after")
                              .defer("host__facts", "before__series", "after__series")[:50])
    return render(request, "benchmarks/list.html", context)


@login_required
def benchmark_detail(request, pk: int) -> HttpResponse:
    bench = get_object_or_404(Benchmark.objects.select_related("host", "operation"), pk=pk)
    context = {"bench": bench, "operation": bench.operation}
    if request.htmx:
        status = 200 if bench.is_active else HTMX_STOP_POLLING
        return render(request, "benchmarks/_live.html", context, status=status)
    context["others"] = (Benchmark.objects.filter(host=bench.host, summary__isnull=False)
                         .exclude(pk=bench.pk)[:50])
    context["telemetry"] = services.telemetry_window(bench)
    # The host's telemetry charts (apps.telemetry.charts) beside pgbench's own.
    context["telemetry_charts"] = (("dirty", "Dirty and Writeback against TPS"),
                                   ("arc-hit", "ARC hit rate"))
    context["telemetry_interval"] = settings.POZOL["TELEMETRY_INTERVAL"]
    return render(request, "benchmarks/detail.html", context)


@login_required
@require_POST
def run(request, host_pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=host_pk)
    back_on_refusal(request, "fleet:host_section", host.pk, "benchmarks")
    form = RunForm(host, request.POST)
    cluster = cleaned(form)["cluster"]
    bench = services.run_benchmark(host, cluster, form.parameters(),
                                   by=request.user, trigger=Operation.Trigger.UI)
    return redirect("benchmarks:benchmark", bench.pk)


@login_required
@require_POST
def compare(request, pk: int) -> HttpResponse:
    after = get_object_or_404(Benchmark, pk=pk)
    back_on_refusal(request, "benchmarks:benchmark", after.pk)
    data = cleaned(CompareForm(request.POST))
    validation = services.validate(data["before"], after, data["label"])
    return redirect("benchmarks:validation", validation.pk)


@login_required
@require_POST
def run_again(request, pk: int) -> HttpResponse:
    """The validation's workload once more, on the same host and cluster."""
    validation = get_object_or_404(Validation.objects.select_related("after__host"), pk=pk)
    back_on_refusal(request, "benchmarks:validation", validation.pk)
    bench = services.run_again(validation.after, by=request.user,
                               trigger=Operation.Trigger.UI)
    messages.info(request, f"Running validation #{validation.pk}'s workload again: compare "
                           "this run with an earlier one when it has finished.")
    return redirect("benchmarks:benchmark", bench.pk)


@login_required
def validation_detail(request, pk: int) -> HttpResponse:
    validation = get_object_or_404(
        Validation.objects.select_related("host", "before__operation", "after__operation"),
        pk=pk)
    return render(request, "benchmarks/validation.html", {
        "validation": validation, "before_label": f"before #{validation.before.pk}",
        "after_label": f"after #{validation.after.pk}"})
