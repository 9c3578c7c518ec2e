"""Snapshot policies at work: validate, assign and unassign, tick (take and prune), preview, alert.

The decisions are apps.snapshots.core's (pure); this module feeds them the
inventory and starts Operations. `tick(now)` is what the periodic task runs
every POZOL_SNAPSHOT_POLICY_INTERVAL seconds: for each enabled assignment it
asks core.schedule.due() and, when a snapshot is due, starts ONE operation for
that target (steps.POLICY: take, then prune with a fresh listing). A target
with an operation still running gets none (two would race on the same
snapshots); the next tick tries again. `now` is a parameter so tests can move
the clock instead of waiting for it.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from apps.fleet.models import Host
from apps.ops import engine
from apps.ops.models import Operation
from apps.snapshots import services, steps
from apps.snapshots.alert_kinds import SNAPSHOTS_STALE
from apps.snapshots.core import retention, schedule
from apps.snapshots.core.policy import Policy, PolicyError
from apps.snapshots.models import PolicyAssignment, SnapshotPolicy
from apps.snapshots.pruning import infos
from apps.snapshots.services import SnapshotError

log = logging.getLogger("pozol.snapshots")


def checked(values: dict) -> Policy:
    """The core Policy for these values, or a SnapshotError naming the field at fault."""
    try:
        return Policy(**values)
    except PolicyError as exc:
        raise SnapshotError(f"{exc.field}: {exc}", fields={exc.field: [str(exc)]}) from None
    except TypeError as exc:
        raise SnapshotError(str(exc)) from None


def policy_values(row: SnapshotPolicy, **changes) -> dict:
    return {**row.core_values(), **changes}


# ---- targets ------------------------------------------------------------------------------

def target_plan(assignment: PolicyAssignment, checkpoint: bool = False):
    """(plan, state) for the assignment's target today; SnapshotError when it is gone."""
    host = assignment.host
    if assignment.cluster_data_dir:
        cluster = host.clusters.filter(data_dir=assignment.cluster_data_dir).select_related(
            "data_dataset", "wal_dataset").first()
        if cluster is None:
            raise SnapshotError(f"no cluster at {assignment.cluster_data_dir} on {host.name} "
                                "(run discovery)")
        return services.plan_target(host, cluster=cluster, checkpoint=checkpoint)
    return services.plan_target(host, dataset=assignment.dataset)


def target_datasets(assignment: PolicyAssignment) -> tuple[str, ...]:
    """Every dataset a snapshot of the target lands on (a recursive one: the parent too)."""
    try:
        chosen, _ = target_plan(assignment)
    except SnapshotError:
        return (assignment.dataset,) if assignment.dataset else ()
    return tuple(chosen.covered)


def assign(policy: SnapshotPolicy, host: Host, *, cluster_data_dir: str = "",
           dataset: str = "") -> PolicyAssignment:
    """Give `policy` to a cluster (by data directory) or a dataset of `host`."""
    if bool(cluster_data_dir) == bool(dataset):
        raise SnapshotError("name a cluster or a dataset (one of them)",
                            fields={"cluster_data_dir": ["or dataset"],
                                    "dataset": ["or cluster_data_dir"]})
    if cluster_data_dir and not host.clusters.filter(data_dir=cluster_data_dir).exists():
        raise SnapshotError(f"cluster_data_dir: no cluster at {cluster_data_dir!r} on "
                            f"{host.name}", fields={"cluster_data_dir": ["unknown cluster"]})
    if dataset:
        services.plan_target(host, dataset=dataset)  # refuses hostile and unknown names
    if PolicyAssignment.objects.filter(host=host, cluster_data_dir=cluster_data_dir,
                                       dataset=dataset).exists():
        raise SnapshotError("that target has a policy already", code="conflict", status=409)
    return PolicyAssignment.objects.create(policy=policy, host=host,
                                           cluster_data_dir=cluster_data_dir, dataset=dataset)


def unassign(assignment: PolicyAssignment) -> None:
    """Take the policy off its target. The snapshots it took stay (destroy them one by
    one, guarded); the next tick re-reads the host's staleness alert."""
    assignment.delete()


# ---- the tick --------------------------------------------------------------------------

def tick(now: datetime | None = None) -> list[Operation]:
    """Start the operations that are due at `now`, and raise or resolve staleness alerts."""
    now = now or timezone.now()
    started: list[Operation] = []
    stale_hosts: dict[int, list[str]] = {}
    checked_hosts: dict[int, Host] = {}
    for assignment in (PolicyAssignment.objects.filter(policy__enabled=True)
                       .select_related("policy", "host")):
        checked_hosts[assignment.host_id] = assignment.host
        try:
            operation, late = run_assignment(assignment, now)
        except SnapshotError as exc:
            log.warning("policy %s on %s: %s", assignment.policy, assignment.host, exc)
            continue
        if operation:
            started.append(operation)
        if late:
            stale_hosts.setdefault(assignment.host_id, []).append(late)
    for host_id, host in checked_hosts.items():
        _alert(host, stale_hosts.get(host_id, []))
    # A host left with no enabled policy has nothing that can be late.
    SNAPSHOTS_STALE.resolve_except(list(checked_hosts))
    return started


@transaction.atomic
def run_assignment(assignment: PolicyAssignment, now: datetime
                   ) -> tuple[Operation | None, str | None]:
    """(the operation started for it, if due; the staleness text, if stale)."""
    locked = (PolicyAssignment.objects.select_for_update(skip_locked=True)
              .filter(pk=assignment.pk).first())
    if locked is None:  # another tick holds it
        return None, None
    policy = checked(policy_values(assignment.policy))
    chosen, state = target_plan(assignment, checkpoint=policy.checkpoint)
    known = infos(assignment.host, chosen.covered)
    late = retention.stale(policy, known, now, assignment.assigned_at)
    text = f"{assignment.target_label}: {late.text}" if late.stale else None
    if _running(assignment):
        return None, text
    wanted = schedule.due(policy, known, now, datasets=chosen.covered)
    if wanted.snapshot is None:
        return None, text
    host = assignment.host
    subject = f"{host.name}: policy {policy.name} on {assignment.target_label}"
    operation = engine.start(
        steps.POLICY.name, host=host, subject=subject[:200], trigger=Operation.Trigger.SCHEDULE,
        state={**state, "assignment": assignment.pk, "policy": asdict(policy),
               "plan": asdict(chosen), "snapshot": wanted.snapshot.name,
               "properties": wanted.snapshot.properties(), "hold": False,
               "checkpoint": policy.checkpoint and assignment.cluster_data_dir != "",
               "now": now.isoformat()})
    return operation, text


def _running(assignment: PolicyAssignment) -> bool:
    return Operation.objects.filter(kind=steps.POLICY.name, state__assignment=assignment.pk,
                                    status__in=Operation.ACTIVE).exists()


def _alert(host: Host, late: list[str]) -> None:
    if late:
        SNAPSHOTS_STALE.raise_once(host, "; ".join(late))
    else:
        SNAPSHOTS_STALE.resolve(host)


# ---- preview ---------------------------------------------------------------------------

def preview(row: SnapshotPolicy, changes: dict, now: datetime | None = None
            ) -> list[dict]:
    """Per assigned target, the existing snapshots the changed policy would destroy."""
    if "name" in changes and changes["name"] != row.name:
        raise SnapshotError("name: a policy's name is its identity on ZFS and cannot change",
                            fields={"name": ["cannot be changed"]})
    now = now or timezone.now()
    old = checked(policy_values(row))
    new = checked(policy_values(row, **changes))
    targets = []
    for assignment in row.assignments.select_related("host"):
        known = infos(assignment.host, target_datasets(assignment))
        result = retention.preview(old, new, known, None, now)
        targets.append({"host": assignment.host.name, "target": assignment.target_label,
                        "destroy": [s.full_name for s in result.plan.destroy],
                        "added": [s.full_name for s in result.added],
                        "spared": [s.full_name for s in result.spared]})
    return targets
