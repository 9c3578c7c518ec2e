"""Drill schedules and runs as the pages and the API list them."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.drills.models import DrillRun, DrillSchedule
from apps.fleet.models import Host

RECENT = 20


def runs() -> QuerySet:
    return DrillRun.objects.select_related("host", "link", "schedule", "triggered_by")


def schedules() -> QuerySet:
    return DrillSchedule.objects.select_related("host", "link")


def of_host(host: Host) -> dict:
    return {"schedules": list(schedules().filter(host=host)),
            "runs": list(runs().filter(host=host)[:RECENT])}
