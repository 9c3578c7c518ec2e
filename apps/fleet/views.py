from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Prefetch, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from apps.fleet import services
from apps.fleet.forms import AddHostForm
from apps.fleet.models import Host, PgCluster, Pool
from apps.ops.errors import DomainError
from apps.ops.models import Operation
from apps.ops.ui_errors import on_form
from apps.tuning import services as tuning

PER_PAGE = 50
# What the overview shows of a host, its pools and its clusters; a host's facts
# (about 68 KB) and a cluster's pg_settings rows are never read for it.
OVERVIEW_COLUMNS = ("name", "address", "port", "user", "host_key_state", "reachable",
                    "last_error", "last_discovery_at", "zfs_version")
POOL_COLUMNS = ("host_id", "name", "health", "size", "capacity")
CLUSTER_COLUMNS = ("host_id", "version", "port")


def overview_hosts(search: str = ""):
    return (Host.objects.search(search).only(*OVERVIEW_COLUMNS)
            .prefetch_related(Prefetch("pools", Pool.objects.only(*POOL_COLUMNS)),
                              Prefetch("clusters", PgCluster.objects.only(*CLUSTER_COLUMNS)))
            .annotate(alert_count=Count("alerts", filter=Q(alerts__resolved_at=None)))
            .order_by("name"))  # Meta.ordering does not apply to a grouped query


@login_required
def overview(request):
    search = request.GET.get("q", "").strip()
    page = Paginator(overview_hosts(search), PER_PAGE).get_page(request.GET.get("page"))
    context = {"page": page, "hosts": page.object_list, "search": search,
               "fleet_is_empty": not search and page.paginator.count == 0}
    # htmx (the search box, the page links) swaps only the table and its pager.
    template = "fleet/_hosts.html" if request.htmx else "fleet/overview.html"
    return render(request, template, context)


@login_required
def add_host(request):
    form = AddHostForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            host, operation = services.add_host(**form.service_arguments(),
                                                trigger=Operation.Trigger.UI, by=request.user)
        except DomainError as exc:  # e.g. another operator just took the name
            on_form(form, exc)
        else:
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
        "operations": host.operations.for_table()[:10],
        "alerts": host.open_alerts,
        "tuning": tuning.host_card(host),
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
    except DomainError as exc:
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
