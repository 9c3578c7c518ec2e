"""Periodic work, kept in django-celery-beat's tables so operators can see and
change it in the admin; created (or re-timed to the configured interval) after
every migrate."""

from __future__ import annotations

import json

from django.conf import settings

PERIODIC = {
    # name: (task, setting holding the interval in seconds)
    "pozol: re-deliver lost and due operation steps": ("ops.sweep", "SWEEP_INTERVAL"),
    "pozol: discover every host": ("fleet.discover_all", "DISCOVERY_INTERVAL"),
    "pozol: delete operations past their retention": ("ops.purge", "OPERATION_PURGE_INTERVAL"),
    "pozol: take and prune policy snapshots": ("snapshots.policy_tick",
                                               "SNAPSHOT_POLICY_INTERVAL"),
    "pozol: run due replication links, check their lag": ("replication.tick",
                                                           "REPLICATION_TICK_INTERVAL"),
    "pozol: destroy clones whose time is up": ("clones.expire", "CLONE_EXPIRE_INTERVAL"),
    "pozol: run due restore drills": ("drills.tick", "DRILL_TICK_INTERVAL"),
    "pozol: find and remove orphan clones": ("drills.reconcile", "RECONCILE_INTERVAL"),
    "pozol: sample every host's telemetry": ("telemetry.collect", "TELEMETRY_INTERVAL"),
    "pozol: roll telemetry up, prune it": ("telemetry.maintain", "TELEMETRY_ROLLUP_INTERVAL"),
}


def ensure_periodic_tasks(**_kwargs) -> None:
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    for name, (task, setting) in PERIODIC.items():
        every = settings.POZOL[setting]
        interval, _ = IntervalSchedule.objects.get_or_create(
            every=every, period=IntervalSchedule.SECONDS)
        PeriodicTask.objects.update_or_create(
            name=name, defaults={"task": task, "interval": interval, "args": json.dumps([])})
