"""Periodic work, kept in django-celery-beat's tables so operators can see and
change it in the admin; created (or re-timed to the configured interval) after
every migrate.

Each app declares its own beat tasks on its AppConfig, as `periodic`, a tuple of
`Periodic` (a property where settings decide how many: telemetry's shards);
ensure_periodic_tasks() reads them from Django's app registry, so this engine
imports no feature app:

    class DrillsConfig(AppConfig):
        periodic = (Periodic("pozol: run due restore drills", "drills.tick",
                             "DRILL_TICK_INTERVAL"),)

A tick decides what is due with due(): work done every `every` is due once that
long has passed since it was last done, or when it never was (replication
links, restore drills). Work that stores its next moment instead (a scrub's
`next_at`, a clone's `expires_at`) is due when that moment has passed, asked of
the database (`next_at__lte=now`) so a tick reads only what it starts.
Snapshot policies are calendar slots, not intervals (apps.snapshots.core.schedule).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.apps import apps
from django.conf import settings


@dataclass(frozen=True)
class Periodic:
    # The PeriodicTask's name: operators see it (and may have re-timed or disabled it)
    # in the admin, and it is the key ensure_periodic_tasks() updates: never rename one.
    name: str
    task: str  # the Celery task's name
    setting: str  # the settings.POZOL key holding the interval in seconds
    args: tuple = ()  # the task's arguments (a telemetry shard's index and count)


# Entries PoZoL made are named with this; others (an operator's own) are never touched.
PREFIX = "pozol: "


def declared() -> list[Periodic]:
    """Every installed app's periodic tasks."""
    return [periodic for config in apps.get_app_configs()
            for periodic in getattr(config, "periodic", ())]


def ensure_periodic_tasks(**_kwargs) -> None:
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    wanted = declared()
    for periodic in wanted:
        every = settings.POZOL[periodic.setting]
        interval, _ = IntervalSchedule.objects.get_or_create(
            every=every, period=IntervalSchedule.SECONDS)
        PeriodicTask.objects.update_or_create(
            name=periodic.name,
            defaults={"task": periodic.task, "interval": interval,
                      "args": json.dumps(list(periodic.args))})
    # An entry of ours declared no more (a telemetry shard past a lowered
    # POZOL_TELEMETRY_SHARDS) would go on sending its task: deleted.
    (PeriodicTask.objects.filter(name__startswith=PREFIX, task__in={p.task for p in wanted})
     .exclude(name__in={p.name for p in wanted}).delete())


def due(last: datetime | None, every: timedelta, now: datetime) -> bool:
    """Whether work done every `every`, last at `last` (None: never), is due at `now`."""
    return last is None or last + every <= now
