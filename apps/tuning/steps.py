"""Applying a stored plan as an Operation: one change at a time, verified.

Per change: `read` records what the host has (the before-value rollback
will restore), then `write` changes it, reads it back and checks it. Reading
first, in a step of its own, means a worker lost after writing never loses
the before-value. A failure stops the plan and says what was applied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from apps.fleet.models import PgCluster
from apps.ops import remote_jobs
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, Wait, register
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import InvalidValue
from apps.remote.errors import RemoteError
from apps.remote.shell import Runner
from apps.tuning import appliers
from apps.tuning.core import pgvalues
from apps.tuning.core.changes import zfs_same
from apps.tuning.core.commands import ARC_MAX
from apps.tuning.core.profiles import SYSCTL_COUNTERPART
from apps.tuning.models import Plan, PlanChange

Status = PlanChange.Status


def _plan(ctx: StepContext) -> Plan:
    return Plan.objects.select_related("host").get(pk=ctx.state["plan"])


def _next_change(ctx: StepContext) -> PlanChange | None:
    queue = ctx.state.get("queue") or []
    return PlanChange.objects.get(pk=queue[0]) if queue else None


def begin(ctx: StepContext) -> Next | Fail:
    plan = _plan(ctx)
    missing = set(plan.requires_acknowledgement) - set(plan.acknowledged)
    if missing:
        return Fail(f"this plan needs the acknowledgement(s) {sorted(missing)}", "unacknowledged")
    pending = plan.changes.filter(supported=True, status=Status.PENDING).order_by("position")
    ctx.state["queue"] = list(pending.values_list("id", flat=True))
    ctx.log(f"{len(ctx.state['queue'])} change(s) to apply")
    return Next("read", progress=5)


def read(ctx: StepContext) -> Next:
    change = _next_change(ctx)
    if change is None:
        return Next("restart")
    if change.before is None:
        change.before = _read(ctx.runner(), change)
        change.save(update_fields=["before"])
    return Next("write")


def write(ctx: StepContext) -> Next | Fail:
    change = _next_change(ctx)
    run = ctx.runner()
    try:
        _write(run, change)
        after = _read(run, change)
    except (RemoteError, InvalidValue) as exc:
        return _stop(ctx, change, str(exc))
    change.after = after["value"]
    if change.method == "pg_restart" and after.get("pending_restart"):
        change.status = Status.AWAITING_RESTART
    elif reads_as(change, after):
        _persist(run, change)
        change.status = Status.APPLIED
    else:
        return _stop(ctx, change, _not_taken(change, after))
    change.save(update_fields=["after", "status"])
    ctx.log(f"{change.layer} {change.target} {change.key}: {change.before['value']!r} -> "
            f"{change.after!r} ({change.get_status_display()}){_arc_note(change, after)}")
    ctx.state["queue"].pop(0)
    changes = PlanChange.objects.filter(plan_id=change.plan_id)
    done, total = changes.exclude(status=Status.PENDING).count(), changes.count()
    return Next("read", progress=min(90, 5 + 85 * done // max(1, total)))


def restart(ctx: StepContext) -> Next | Wait | Fail:
    plan = _plan(ctx)
    waiting = plan.changes.filter(status=Status.AWAITING_RESTART)
    if not waiting.exists():
        return Next("finish")
    if not plan.allow_restart:
        ctx.log("not restarting PostgreSQL (not allowed for this apply); waiting for the next "
                "restart: " + ", ".join(waiting.values_list("key", flat=True)))
        return Next("finish")
    for data_dir in sorted(set(waiting.values_list("target", flat=True))):
        cluster = _cluster(plan, data_dir)
        status = remote_jobs.advance(ctx, f"restart-{_slug(data_dir)}", cluster.control("restart"))
        if status.state == "running":
            return Wait(1, message="restarting PostgreSQL")
        if status.state != "succeeded":
            return _stop(ctx, waiting.filter(target=data_dir).first(),
                         f"pg_ctl restart ended {status.state} (exit {status.exit_code})")
    return Next("verify_restart", "PostgreSQL restarted")


def verify_restart(ctx: StepContext) -> Next | Fail:
    plan = _plan(ctx)
    run = ctx.runner()
    for change in plan.changes.filter(status=Status.AWAITING_RESTART):
        after = _read(run, change)
        if not reads_as(change, after):
            return _stop(ctx, change, f"after the restart the host reads {after['value']!r}")
        change.after, change.status = after["value"], Status.APPLIED
        change.save(update_fields=["after", "status"])
    return Next("finish")


def finish(ctx: StepContext) -> Done:
    from apps.fleet import services as fleet

    plan = _plan(ctx)
    with transaction.atomic():
        plan.status = Plan.Status.APPLIED
        plan.save(update_fields=["status"])
        if plan.kind == Plan.Kind.ROLLBACK and plan.rollback_of:
            plan.rollback_of.changes.filter(status__in=[Status.APPLIED, Status.AWAITING_RESTART]
                                            ).update(status=Status.ROLLED_BACK)
            Plan.objects.filter(pk=plan.rollback_of_id).update(status=Plan.Status.ROLLED_BACK)
        _record_applied_version(plan)
    fleet.discover(plan.host)
    counts = {status: plan.changes.filter(status=status).count() for status in Status.values}
    return Done({"plan": plan.pk, **{k: v for k, v in counts.items() if v}},
                message="plan applied" if not counts[Status.AWAITING_RESTART]
                else "plan applied; some settings wait for a PostgreSQL restart")


def _record_applied_version(plan: Plan) -> None:
    assignment = getattr(plan.host, "assignment", None)
    if assignment is None:
        return
    version = plan.profile_version if plan.kind == Plan.Kind.APPLY else None
    if plan.kind == Plan.Kind.APPLY and assignment.profile_id != version.profile_id:
        return
    assignment.applied_version = version
    assignment.save(update_fields=["applied_version"])


def _stop(ctx: StepContext, change: PlanChange, error: str) -> Fail:
    change.status, change.error = Status.FAILED, error
    change.save(update_fields=["status", "error"])
    plan = _plan(ctx)
    Plan.objects.filter(pk=plan.pk).update(status=Plan.Status.FAILED)
    applied = [f"{c.layer} {c.target} {c.key}" for c in
               plan.changes.filter(status__in=[Status.APPLIED, Status.AWAITING_RESTART])]
    where = f"{change.layer} {change.target} {change.key}"
    partly = change.before is not None  # read, so its write may have got halfway
    return Fail(failure_text(where, error, applied, partly_written=partly), "change_failed")


def failure_text(where: str, error: str, applied: list[str], *,
                 partly_written: bool = False) -> str:
    """The cause first, in the host's own words; then where the plan stopped and
    what to do; then the command's detail. A rollback is offered only when there
    may be something to roll back."""
    cause, _, detail = error.partition("\n")
    if applied:
        state = (f"Applied before it: {', '.join(applied)}. "
                 "Roll the plan back to restore them.")
    elif partly_written:
        state = ("Nothing was applied before it, but this change may be partly "
                 "written: roll the plan back to restore its old value.")
    else:
        state = "Nothing was applied before it: the host is as it was."
    return "\n".join(part for part in (cause, f"Stopped at {where}. {state}", detail) if part)


# ---- one change, by layer: one table of Layer objects ---------------------------

def _cluster(plan: Plan, data_dir: str) -> ClusterTarget:
    row = PgCluster.objects.get(host=plan.host, data_dir=data_dir)
    return row.target()


def _read(run, change: PlanChange) -> dict:
    return LAYERS[change.layer].read(run, change)


def _write(run, change: PlanChange) -> None:
    LAYERS[change.layer].write(run, change)


def reads_as(change: PlanChange, after: dict) -> bool:
    """Whether the host now reports the change's desired value, compared as the
    planner compares (16K is 16384; 1GB is 131072 pages of 8kB)."""
    return LAYERS[change.layer].reads_as(change, after)


def _not_taken(change: PlanChange, after: dict) -> str:
    ceiling = after.get("arc_c_max")
    if _is_arc_max(change) and ceiling and _same_text(change, after):
        return (f"wrote {change.desired!r} to zfs_arc_max but the ARC kept c_max {ceiling}:"
                " OpenZFS ignores a value below 64 MiB, not above zfs_arc_min or not below"
                " the host's memory")
    return f"wrote {change.desired!r} but the host reads {after['value']!r}"


def _arc_note(change: PlanChange, after: dict) -> str:
    """What the ARC's ceiling is now: the parameter's text alone does not say it."""
    ceiling = after.get("arc_c_max")
    if not _is_arc_max(change) or ceiling is None:
        return ""
    if change.desired.strip() == "0":
        return (f"; arcstats c_max {ceiling}: a running OpenZFS ignores 0, so the ARC keeps"
                " this ceiling until the next boot")
    return f"; arcstats c_max {ceiling}: the ARC's ceiling is in force now"


def _is_arc_max(change: PlanChange) -> bool:
    return change.layer == PlanChange.Layer.MODULE and change.key == ARC_MAX


def _persist(run, change: PlanChange) -> None:
    """Make a verified live value survive a reboot (zfs and ALTER SYSTEM already do).
    Only after verification: a value the kernel ignored must not be persisted."""
    LAYERS[change.layer].persist(run, change)


@dataclass(frozen=True)
class Layer:
    """How the apply steps read, write, check and persist one layer's changes."""

    read: Callable[[Runner, PlanChange], dict]
    write: Callable[[Runner, PlanChange], None]
    reads_as: Callable[[PlanChange, dict], bool]
    persist: Callable[[Runner, PlanChange], None]


def _write_zfs(run, change: PlanChange) -> None:
    if change.action == "reset":
        appliers.reset_zfs(run, change.target, change.key)
    else:
        appliers.write_zfs(run, change.target, change.key, change.desired)


def _write_pg(run, change: PlanChange) -> None:
    cluster = _cluster(change.plan, change.target)
    if change.action == "reset":
        appliers.reset_pg(run, cluster, change.key)
    else:
        appliers.write_pg(run, cluster, change.key, change.desired)


def _persist_sysctl(run, change: PlanChange) -> None:
    if change.action != "reset":
        appliers.persist_sysctl(run, change.key, change.desired)
        return
    # A restore may write the pair's other member: forget both persisted lines.
    for name in filter(None, {change.key, SYSCTL_COUNTERPART.get(change.key)}):
        appliers.persist_sysctl(run, name, None)


def _persist_module(run, change: PlanChange) -> None:
    appliers.persist_module(run, change.key, None if change.action == "reset" else change.desired)


def _same_text(change: PlanChange, after: dict) -> bool:
    return after["value"].strip() == change.desired.strip()


def _module_reads_as(change: PlanChange, after: dict) -> bool:
    """zfs_arc_max counts only once the ARC took it: OpenZFS keeps a value it ignores
    in the parameter file (see core/rollback.py); 0 never moves c_max while running."""
    if not _same_text(change, after):
        return False
    ceiling = after.get("arc_c_max")
    if not _is_arc_max(change) or ceiling is None or change.desired.strip() == "0":
        return True
    return ceiling == change.desired.strip()


def _pg_reads_as(change: PlanChange, after: dict) -> bool:
    """In the setting's own unit, as the planner compares (psql prints a NULL unit as "")."""
    return pgvalues.same(after["setting"], change.desired, after["vartype"],
                         after["unit"] or None, change.key)


def _already_persistent(run, change: PlanChange) -> None:
    """zfs set and ALTER SYSTEM survive a reboot by themselves."""


LAYERS: dict[str, Layer] = {
    PlanChange.Layer.ZFS: Layer(
        read=lambda run, ch: appliers.read_zfs(run, ch.target, ch.key),
        write=_write_zfs,
        reads_as=lambda ch, after: zfs_same(ch.key, after["value"], ch.desired),
        persist=_already_persistent),
    PlanChange.Layer.SYSCTL: Layer(
        read=lambda run, ch: appliers.read_sysctl(run, ch.key),
        write=lambda run, ch: appliers.write_sysctl(run, ch.key, ch.desired),
        reads_as=_same_text,
        persist=_persist_sysctl),
    PlanChange.Layer.MODULE: Layer(
        read=lambda run, ch: appliers.read_module(run, ch.key),
        write=lambda run, ch: appliers.write_module(run, ch.key, ch.desired),
        reads_as=_module_reads_as,
        persist=_persist_module),
    PlanChange.Layer.POSTGRES: Layer(
        read=lambda run, ch: appliers.read_pg(run, _cluster(ch.plan, ch.target), ch.key),
        write=_write_pg,
        reads_as=_pg_reads_as,
        persist=_already_persistent),
}


def _slug(path: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in path).strip("-")[-60:]


KIND = register(Kind(
    name="tuning.apply",
    steps={"begin": begin, "read": read, "write": write, "restart": restart,
           "verify_restart": verify_restart, "finish": finish},
    first_step="begin",
    mutating=True,
))
