from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, F, OuterRef, Prefetch, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST

from apps.common.errors import DomainError
from apps.fleet import reserves, sections, services
from apps.fleet.forms import AddHostForm, ConfirmHostKeyForm, PoolReserveForm
from apps.fleet.models import Host, PgCluster, Pool
from apps.ops.models import Operation
from apps.ops.ui_errors import back_on_refusal, cleaned, on_form

PER_PAGE = 50
# What the overview shows of a host, its pools and its clusters; a host's facts
# (about 68 KB) and a cluster's pg_settings rows are never read for it.
OVERVIEW_COLUMNS = ("name", "address", "port", "user", "host_key_state", "reachable",
                    "last_error", "last_seen_at", "last_discovery_at", "zfs_version",
                    "findings_by_severity")
POOL_COLUMNS = ("host_id", "name", "health", "size", "capacity")
CLUSTER_COLUMNS = ("host_id", "version", "port")


def with_summary(hosts: QuerySet) -> QuerySet:
    """Hosts with what the header and the overview show beside their own columns:
    open alerts, the operation running now, and each app's summaries; all in the
    hosts' own query, whatever their number."""
    running = (Operation.objects.filter(host=OuterRef("pk"), status__in=Operation.ACTIVE)
               .order_by("-pk"))
    # A subquery, not Count() over a join: a count makes the query grouped, and a
    # grouped query aggregates every host of the fleet before it can sort and cut
    # out one page; a subquery in the select list runs for the page's rows only.
    alert = Host.alerts.field.model  # apps/alerts' Alert: fleet imports none of it
    open_alerts = (alert.objects.filter(host=OuterRef("pk"), resolved_at=None)
                   .order_by().values("host").annotate(n=Count("pk")).values("n"))
    return sections.annotated(hosts.annotate(
        alert_count=Coalesce(Subquery(open_alerts), 0),
        running_operation_id=Subquery(running.values("pk")[:1]),
        running_operation_kind=Subquery(running.values("kind")[:1]),
    ))


# The fullest pool, for sorting by capacity (a subquery: a join would multiply counts).
_FULLEST = Subquery(Pool.objects.filter(host=OuterRef("pk"), capacity__isnull=False)
                    .order_by("-capacity").values("capacity")[:1])


def sort_orders() -> dict[str, tuple[str, tuple]]:
    """?sort=ID -> (what it shows first, order_by expressions), every one worst first."""
    orders = {"capacity": ("fullest pool", (F("fullest_capacity").desc(nulls_last=True),))}
    orders |= {s.id: (s.sort_label or s.title, s.worst_first) for s in sections.sortable()}
    return orders


def overview_order(search: str = "", sort: str = "") -> QuerySet:
    """The ids of the hosts in the overview's order. Only the sort's own columns are
    read for every host (a narrow query PostgreSQL sorts in a few milliseconds at
    10,000 hosts); the shown rows' summaries are read for the page alone."""
    hosts = Host.objects.search(search)
    order = sort_orders().get(sort)
    if order is None:
        return hosts.order_by("name").values_list("pk", flat=True)
    if sort == "capacity":
        hosts = hosts.annotate(fullest_capacity=_FULLEST)
    else:  # values_list() below leaves out every annotation the order does not use
        hosts = sections.annotated(hosts)
    return hosts.order_by(*order[1], "name").values_list("pk", flat=True)


def overview_hosts(ids: list[int]) -> list[Host]:
    """The hosts with these ids, in this order, with what the overview shows of them."""
    hosts = (with_summary(Host.objects.filter(pk__in=ids).only(*OVERVIEW_COLUMNS))
             .prefetch_related(Prefetch("pools", Pool.objects.only(*POOL_COLUMNS)),
                               Prefetch("clusters", PgCluster.objects.only(*CLUSTER_COLUMNS))))
    by_id = {host.pk: host for host in hosts}
    return [by_id[pk] for pk in ids if pk in by_id]


class CountedPaginator(Paginator):
    """A paginator told its count, which would otherwise count the annotated query."""

    def __init__(self, object_list, per_page: int, *, count: int) -> None:
        super().__init__(object_list, per_page)
        self.__dict__["count"] = count  # Paginator.count is a cached_property


@login_required
def overview(request) -> HttpResponse:
    search = request.GET.get("q", "").strip()
    sort = request.GET.get("sort", "")
    sort = sort if sort in sort_orders() else ""
    # Counted on the hosts alone: the page's summaries do not change how many there are.
    paginator = CountedPaginator(overview_order(search, sort), PER_PAGE,
                                 count=Host.objects.search(search).count())
    page = paginator.get_page(request.GET.get("page"))
    hosts = overview_hosts(list(page.object_list))
    context = {"page": page, "hosts": hosts, "search": search, "sort": sort,
               "sorts": sort_orders(), "summaries": sections.summaries(),
               "totals": [(total, total.context()) for total in sections.totals()],
               "fleet_is_empty": not search and page.paginator.count == 0,
               "query": urlencode({k: v for k, v in (("q", search), ("sort", sort)) if v}),
               "search_query": urlencode({"q": search}) if search else "",
               # Current values (telemetry) are read again at the sampling interval.
               "refresh_seconds": settings.POZOL["TELEMETRY_INTERVAL"],
               # The table polls for itself only while something runs on a host it shows.
               "something_runs": any(host.running_operation_id for host in hosts)}
    # htmx (the search box, the page links, the polling) swaps only the table and its pager.
    return _render(request, "fleet/_hosts.html", "fleet/overview.html", context)


def _render(request, partial: str, page: str, context: dict) -> HttpResponse:
    """The partial for an htmx swap, the whole page otherwise (also when htmx
    restores history it has no copy of)."""
    swap = request.htmx and not request.htmx.history_restore_request
    response = render(request, partial if swap else page, context)
    patch_vary_headers(response, ["HX-Request"])
    return response


@login_required
def add_host(request) -> HttpResponse:
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


def host_page_host(pk: int) -> Host:
    hosts = with_summary(Host.objects.prefetch_related(
        "pools", Prefetch("clusters", PgCluster.objects.select_related("data_dataset",
                                                                       "wal_dataset"))))
    return get_object_or_404(hosts, pk=pk)


@login_required
def host_detail(request, pk: int, section: str = "overview") -> HttpResponse:
    """The host page: its header, then one section (a tab), each at its own URL."""
    shown = sections.section(section)
    if shown is None:
        raise Http404("No such section of the host page.")
    host = host_page_host(pk)
    known = not (shown.needs_facts and host.never_reached)
    context = {"host": host, "section": shown, "sections": sections.sections(),
               "summaries": sections.summaries(), "alerts": host.open_alerts,
               "known": known}
    if known and shown.context:
        context.update(shown.context(host))
    return _render(request, "fleet/_host_sections.html", "fleet/host.html", context)


@login_required
def pool_reserve(request, pk: int, pool: str) -> HttpResponse:
    """One pool's reserve (the free space clones, snapshots, receives and experiments
    leave alone)."""
    host = get_object_or_404(Host.objects.only("pk", "name"), pk=pk)
    row = reserves.shown_one(host, pool)
    if row is None:
        raise Http404("No such pool on this host.")
    form = PoolReserveForm.of(row, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            reserves.set_reserve(host, pool, **form.values())
        except DomainError as exc:
            on_form(form, exc)
        else:
            messages.success(request, f"Reserve of {host.name}:{pool} saved.")
            return redirect("fleet:host_section", host.pk, "datasets")
    return render(request, "fleet/pool_reserve.html", {"host": host, "pool": row, "form": form})


@login_required
@require_POST
def discover(request, pk: int) -> HttpResponse:
    operation = services.discover(get_object_or_404(Host, pk=pk),
                                  trigger=Operation.Trigger.UI, by=request.user)
    return redirect("ops:operation", operation.pk)


@login_required
@require_POST
def confirm_host_key(request, pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=pk)
    back_on_refusal(request, "fleet:host", pk)
    fingerprint = cleaned(ConfirmHostKeyForm(request.POST))["fingerprint"]
    operation = services.confirm_host_key(host, fingerprint, by=request.user)
    return redirect("ops:operation", operation.pk)


@login_required
@require_POST
def forget_host_key(request, pk: int) -> HttpResponse:
    operation = services.accept_changed_host_key(get_object_or_404(Host, pk=pk),
                                                 by=request.user)
    return redirect("ops:operation", operation.pk)


@login_required
@require_POST
def delete_host(request, pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=pk)
    services.remove_host(host)
    messages.info(request, f"Host {host.name} removed from PoZoL (nothing on it was touched).")
    return redirect("fleet:overview")
