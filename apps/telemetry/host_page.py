"""What telemetry adds to the host page and the overview (apps.fleet.sections): the
Metrics tab, the ARC hit rate and TPS columns with their sparklines (sortable worst
first), and the fleet's space saved by compression."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, F, QuerySet, Sum

from apps.fleet.models import Host
from apps.fleet.sections import (
    Section,
    Summary,
    Total,
    register_section,
    register_summary,
    register_total,
)
from apps.telemetry import charts
from apps.telemetry.models import HostTelemetry

# The overview's columns come from HostTelemetry's "now" columns, joined in the hosts'
# own query (apps.telemetry.core.current keeps them at each sample).
_NOW = {"telemetry_arc": F("telemetry__arc_hit_rate"), "telemetry_tps": F("telemetry__tps"),
        "telemetry_recent": F("telemetry__recent"),
        "telemetry_at": F("telemetry__last_sample_at")}


def with_now(hosts: QuerySet) -> QuerySet:
    return hosts.annotate(**_NOW)


def interval() -> int:
    return settings.POZOL["TELEMETRY_INTERVAL"]


def now(host: Host) -> dict:
    """The tab's current values: the host's one HostTelemetry row."""
    state = HostTelemetry.objects.filter(host=host).defer("last_sample").first()
    return {"state": state, "interval": interval()}


def metrics(host: Host) -> dict:
    return {"charts": charts.CHARTS.values(), "ranges": charts.RANGES,
            "default_range": charts.DEFAULT_RANGE, **now(host)}


def fleet_savings() -> dict:
    totals = HostTelemetry.objects.aggregate(saved=Sum("space_saved"), used=Sum("used"),
                                             hosts=Count("space_saved"))
    return {"savings": totals}


def register() -> None:
    register_section(Section("metrics", "Metrics", 15, "telemetry/_host_section.html",
                             context=metrics))
    register_summary(Summary(
        "arc", "ARC hit rate", 60, "telemetry/_summary_arc.html", annotate=with_now,
        worst_first=(F("telemetry_arc").asc(nulls_last=True),),
        sort_label="lowest ARC hit rate"))
    register_summary(Summary(
        "tps", "TPS", 61, "telemetry/_summary_tps.html",
        worst_first=(F("telemetry_tps").desc(nulls_last=True),), sort_label="busiest"))
    register_total(Total("space_saved", 10, "telemetry/_total_saved.html", fleet_savings))
