from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from apps.benchmarks import services
from apps.benchmarks.models import Benchmark, Validation
from apps.fleet.models import Host, PgCluster
from apps.ops.models import Operation

# htmx stops polling when a response has this status (as apps.ops.views).
HTMX_STOP_POLLING = 286
_NUMBERS = ("scale", "clients", "threads", "duration")


@login_required
def benchmark_list(request):
    benchmarks = Benchmark.objects.select_related("host", "operation")[:100]
    validations = Validation.objects.select_related("host", "before", "after")[:50]
    return render(request, "benchmarks/list.html",
                  {"benchmarks": benchmarks, "validations": validations})


@login_required
def benchmark_detail(request, pk: int):
    bench = get_object_or_404(Benchmark.objects.select_related("host", "operation"), pk=pk)
    context = {"bench": bench, "operation": bench.operation}
    if request.htmx:
        status = 200 if bench.is_active else HTMX_STOP_POLLING
        return render(request, "benchmarks/_live.html", context, status=status)
    context["others"] = (Benchmark.objects.filter(host=bench.host, summary__isnull=False)
                         .exclude(pk=bench.pk)[:50])
    return render(request, "benchmarks/detail.html", context)


def _form_parameters(post) -> dict:
    params: dict = {"init": post.get("init") == "on"}
    for name in ("database", "mode", "protocol"):
        if post.get(name):
            params[name] = post[name]
    for name in _NUMBERS:
        if post.get(name):
            params[name] = int(post[name]) if post[name].isdigit() else post[name]
    return params


@login_required
@require_POST
def run(request, host_pk: int):
    host = get_object_or_404(Host, pk=host_pk)
    cluster = None
    if request.POST.get("cluster"):
        cluster = get_object_or_404(PgCluster, pk=request.POST["cluster"], host=host)
    try:
        bench = services.run_benchmark(host, cluster, _form_parameters(request.POST),
                                       by=request.user, trigger=Operation.Trigger.UI)
    except ValidationError as exc:
        _flash(request, exc)
        return redirect("fleet:host", host.pk)
    return redirect("benchmarks:benchmark", bench.pk)


def _flash(request, exc: ValidationError) -> None:
    for field, problems in exc.message_dict.items():
        messages.error(request, f"{field}: {' '.join(problems)}")


@login_required
@require_POST
def compare(request, pk: int):
    after = get_object_or_404(Benchmark, pk=pk)
    before = get_object_or_404(Benchmark, pk=request.POST.get("before") or 0)
    try:
        validation = services.validate(before, after, request.POST.get("label", ""))
    except ValidationError as exc:
        _flash(request, exc)
        return redirect("benchmarks:benchmark", after.pk)
    return redirect("benchmarks:validation", validation.pk)


@login_required
def validation_detail(request, pk: int):
    validation = get_object_or_404(
        Validation.objects.select_related("host", "before__operation", "after__operation"),
        pk=pk)
    return render(request, "benchmarks/validation.html", {"validation": validation})
