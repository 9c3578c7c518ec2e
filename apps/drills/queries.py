"""Drill schedules and runs as the pages and the API list them, and the clone names the
orphan reconciler's step must not remove."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.clones.models import Clone
from apps.drills.models import DrillRun, DrillSchedule
from apps.fleet.models import Host
from apps.ops.models import Operation

RECENT = 20


def runs() -> QuerySet:
    return DrillRun.objects.select_related("host", "link", "schedule", "triggered_by")


def schedules() -> QuerySet:
    return DrillSchedule.objects.select_related("host", "link")


def of_host(host: Host) -> dict:
    return {"schedules": list(schedules().filter(host=host)),
            "runs": list(runs().filter(host=host)[:RECENT])}


def known_names(host: Host) -> set[str]:
    """The clone names the database has on `host`: live clones, running drills and
    table recoveries."""
    names = set(Clone.objects.filter(host=host).exclude(state=Clone.State.DESTROYED)
                .values_list("name", flat=True))
    names |= {f"pozol-drill-{pk}" for pk in DrillRun.objects.filter(
        host=host, status=DrillRun.Status.RUNNING,
        operation__status__in=Operation.ACTIVE).values_list("pk", flat=True)}
    names |= {operation.state.get("clone_name") for operation in Operation.objects.filter(
        host=host, kind="drills.recover_table", status__in=Operation.ACTIVE).only("state")}
    return names - {None}


def busy_names(host: Host) -> set[str]:
    """Names with an operation running for them (a clone's, or a drill's)."""
    names = set()
    for operation in Operation.objects.filter(host=host, status__in=Operation.ACTIVE).only(
            "kind", "state"):
        if operation.kind.startswith("clones.") and operation.state.get("clone"):
            clone = Clone.objects.filter(pk=operation.state["clone"]).first()
            if clone is not None:
                names.add(clone.name)
        elif operation.kind.startswith("drills.") and operation.state.get("run"):
            names.add(f"pozol-drill-{operation.state['run']}")
        elif operation.kind.startswith("drills.") and operation.state.get("clone_name"):
            names.add(operation.state["clone_name"])
    return names
