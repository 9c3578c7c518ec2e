from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from apps.fleet import services
from apps.fleet.forms import AddHostForm
from apps.fleet.models import Host
from apps.ops.models import Operation


@login_required
def overview(request):
    hosts = (Host.objects.prefetch_related("pools", "clusters")
             .annotate(alert_count=Count("alerts", filter=Q(alerts__resolved_at=None))))
    return render(request, "fleet/overview.html", {"hosts": hosts})


@login_required
def add_host(request):
    form = AddHostForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        host, operation = services.add_host(**form.service_arguments(),
                                            trigger=Operation.Trigger.UI, by=request.user)
        messages.info(request, f"Host {host.name} added; discovery #{operation.pk} started.")
        return redirect("fleet:host", host.pk)
    return render(request, "fleet/add_host.html", {"form": form})


@login_required
def host_detail(request, pk: int):
    host = get_object_or_404(Host, pk=pk)
    context = {
        "host": host,
        "pools": host.pools.all(),
        "datasets": host.datasets.all(),
        "clusters": host.clusters.select_related("data_dataset", "wal_dataset"),
        "disks": host.disks.all(),
        "operations": host.operations.all()[:10],
        "alerts": host.open_alerts,
    }
    return render(request, "fleet/host.html", context)


@login_required
@require_POST
def discover(request, pk: int):
    operation = services.discover(get_object_or_404(Host, pk=pk),
                                  trigger=Operation.Trigger.UI, by=request.user)
    return redirect("ops:operation", operation.pk)


@login_required
@require_POST
def confirm_host_key(request, pk: int):
    host = get_object_or_404(Host, pk=pk)
    try:
        operation = services.confirm_host_key(host, request.POST.get("fingerprint", ""),
                                              by=request.user)
    except ValueError as exc:
        messages.error(request, str(exc))
        return redirect("fleet:host", pk)
    return redirect("ops:operation", operation.pk)


@login_required
@require_POST
def forget_host_key(request, pk: int):
    operation = services.accept_changed_host_key(get_object_or_404(Host, pk=pk),
                                                 by=request.user)
    return redirect("ops:operation", operation.pk)


@login_required
@require_POST
def delete_host(request, pk: int):
    host = get_object_or_404(Host, pk=pk)
    host.delete()
    messages.info(request, f"Host {host.name} removed from PoZoL (nothing on it was touched).")
    return redirect("fleet:overview")
