"""Telemetry pages: the Metrics tab's chart data (session-signed JSON in the charts'
shape) and its current values, polled by htmx."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render

from apps.fleet.models import Host
from apps.telemetry import charts, host_page
from apps.telemetry.services import TelemetryError


@login_required
def chart(request, pk: int, chart_id: str) -> HttpResponse:
    """GET ?range=1h|6h|24h|7d|30d or ?from=&to= (unix seconds): one chart's JSON."""
    host = get_object_or_404(Host.objects.only("pk"), pk=pk)
    try:
        start, end = charts.window(request.GET.get("range"), request.GET.get("from"),
                                   request.GET.get("to"))
        data = charts.chart_data(host, chart_id, start, end)
    except TelemetryError as exc:  # the one place a refused chart query is mapped
        return JsonResponse({"detail": exc.message, "code": exc.code, "fields": exc.fields},
                            status=exc.status)
    return JsonResponse(data)


@login_required
def now(request, pk: int) -> HttpResponse:
    """The Metrics tab's current values (htmx polls this at the sampling interval)."""
    host = get_object_or_404(Host.objects.only("pk", "name"), pk=pk)
    return render(request, "telemetry/_now.html", {"host": host, **host_page.now(host)})
