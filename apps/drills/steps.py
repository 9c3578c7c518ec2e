"""The restore drill as one operation step: clone, start, check, destroy, record.

The pool is read on the host first (the service checked discovery's figures; the pool
may have filled since): below its reserve, the drill fails before anything is cloned.
It reuses the clone engine's own commands (apps.clones.core.commands): the same
create script a member's clone runs, with the host's per-clone ZFS quota (its
`pozol-mark` lines give the clone and start times), then the check (core.check), then
the same destroy. Whatever happens the clone is destroyed before the step ends; a
step the sweeper re-delivers (its worker died mid-drill) destroys what the first
attempt made before it starts again. The run's result and the host's alert are written at the end.
"""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from apps.clones.core import commands
from apps.clones.core.layout import Layout
from apps.clones.steps import identity
from apps.drills import queries
from apps.drills.core import check as core
from apps.drills.core import orphans
from apps.drills.core import recover as recovery
from apps.drills.host_alert import update_alert
from apps.drills.models import DrillRun
from apps.fleet import reserves
from apps.ops.engine import Done, Fail, Kind, StepContext, register
from apps.ops.models import LogLine, Operation
from apps.remote.errors import RemoteError

TAIL = 2000


def run(ctx: StepContext) -> Done | Fail:
    row = DrillRun.objects.select_related("host").get(pk=ctx.state["run"])
    layout = row.decoded_layout()
    times: dict[str, float] = {}
    outcome: dict = {}
    ssh = None
    try:
        ssh = ctx.runner()
        if ctx.state.get("began"):
            ssh(commands.destroy(layout), timeout=120, check=False)
            ctx.log(f"a previous attempt was interrupted: removed {layout.root}",
                    LogLine.Level.WARNING)
        ctx.state["began"] = True
        Operation.objects.filter(pk=ctx.operation.pk).update(state=ctx.state)
        outcome = _drill(ctx, ssh, row, layout, times)
    except RemoteError as exc:
        outcome = {"error": f"the host did not answer: {exc}"}
        ssh = None
    finally:
        if ssh is not None:
            gone = _destroy(ssh, layout, times)
            if gone:
                outcome["error"] = "; ".join(filter(None, [outcome.get("error"), gone]))
    failed = bool(outcome.get("error"))
    if times:
        times["total"] = sum(times.values())
    DrillRun.objects.filter(pk=row.pk).update(
        status=DrillRun.Status.FAILED if failed else DrillRun.Status.PASSED,
        finished_at=timezone.now(), answers=outcome.get("answers", {}),
        error=outcome.get("error", "")[-TAIL:], log_tail=outcome.get("log", "")[-TAIL:],
        reached_at=outcome.get("reached_at"),
        **{f"{part}_seconds": seconds for part, seconds in times.items()})
    update_alert(row.host)
    if failed:
        return Fail(f"restore drill of {row.cluster_data_dir} @{row.snapshot} failed: "
                    f"{outcome['error'][-800:]}", code="drill_failed")
    return Done({"run": row.pk, "seconds": times, "answers": outcome["answers"]},
                message=f"restore drill passed: @{row.snapshot}"
                        + (f" replayed to {row.target_time.isoformat()}"
                           if row.target_time else "")
                        + f" started and answered in {len(outcome['answers'])} databases")


def _no_room(ctx: StepContext, ssh) -> str:
    """Why the clone may not be made now (its pool read on the host, below its reserve
    since the service's check), or ""; an operation started before there was a check
    carries none."""
    shortage = reserves.refusal_in_step(ssh, ctx.host, ctx.state.get("room"))
    return f"refused: {shortage.message}" if shortage else ""


def _drill(ctx: StepContext, ssh, row: DrillRun, layout, times: dict) -> dict:
    refused = _no_room(ctx, ssh)
    if refused:
        return {"error": refused}
    password = secrets.token_hex(16)
    started = time.time()
    made = ssh(commands.create(layout, password, {**identity(), "pozol:drill": str(row.pk)},
                               quota=ctx.state.get("quota")),
               timeout=600, check=False)
    marks = commands.marks(made.stdout)
    if "cloned" in marks:
        times["clone"] = marks["cloned"] - marks.get("begin", started)
        if "started" in marks:
            times["start"] = marks["started"] - marks["cloned"]
    if not made.ok:
        error, log = core.split_log(made.stderr or made.stdout)
        if not log and "cloned" in marks:
            log = ssh(core.log_tail(layout), timeout=60, check=False).stdout
        return {"error": f"clone or start failed: {error}", "log": log}
    ctx.log(f"clone {layout.name} of @{layout.snapshot} answered on port {layout.port}")
    reached = {}
    if layout.recovery is not None:
        at = commands.reached(made.stdout)
        reached["reached_at"] = datetime.fromtimestamp(at, UTC) if at is not None else None
        ctx.log(f"replayed to {layout.recovery.value}: the last transaction replayed "
                f"committed at {reached['reached_at'] or 'none'}")
        missed = core.moment_missed(row.target_time.timestamp(), at, row.archive_timeout or 0)
        if missed:
            return {"error": f"the clone did not reach the moment: {missed}", **reached}
    began = time.monotonic()
    role = f"{core.ROLE_PREFIX}{secrets.token_hex(6)}"
    checked = ssh(core.check(layout, row.check_query, role), timeout=600, check=False)
    times["check"] = time.monotonic() - began
    if not checked.ok:
        error, log = core.split_log(checked.stderr or checked.stdout)
        return {"error": f"the check query failed: {error}", "log": log, **reached}
    return {"answers": core.answers(checked.stdout), **reached}


def _destroy(ssh, layout, times: dict) -> str:
    """The drill's clone gone, or why not."""
    began = time.monotonic()
    try:
        gone = ssh(commands.destroy(layout), timeout=180, check=False)
    except RemoteError as exc:
        return f"destroying the drill's clone failed: {exc}"
    times["destroy"] = time.monotonic() - began
    if not gone.ok:
        return ("destroying the drill's clone failed: "
                f"{(gone.stderr or gone.stdout).strip()[-800:]}")
    return ""


def reconcile(ctx: StepContext) -> Done:
    ssh = ctx.runner()
    found = orphans.parse(ssh(orphans.LIST, timeout=60).stdout)
    grace = timedelta(minutes=settings.POZOL["ORPHAN_GRACE_MINUTES"]).total_seconds()
    remove, kept = orphans.orphans(found, known=queries.known_names(ctx.host),
                                busy=queries.busy_names(ctx.host),
                                instance=settings.POZOL["INSTANCE"], now=time.time(),
                                grace_seconds=grace)
    removed, failed = [], []
    for entry in remove:
        result = ssh(orphans.remove(entry), timeout=180, check=False)
        if result.ok:
            removed.append(entry.name)
            ctx.log(f"removed orphan clone {entry.name} ({entry.root}, "
                    f"{len(entry.postmasters)} postmaster(s))", LogLine.Level.WARNING)
        else:
            failed.append(entry.name)
            ctx.log(f"could not remove orphan clone {entry.name}: "
                    f"{(result.stderr or result.stdout).strip()[-400:]}", LogLine.Level.ERROR)
    for entry, why in kept:
        ctx.log(f"orphan clone {entry.name} ({entry.root}) left alone: {why}")
    return Done({"removed": removed, "failed": failed,
                 "kept": {entry.name: why for entry, why in kept},
                 "clones_seen": [entry.name for entry in found]},
                message=f"{len(removed)} orphan clone(s) removed, {len(kept)} left alone"
                        + (f", {len(failed)} could not be removed" if failed else ""))


def recover_table(ctx: StepContext) -> Done | Fail:
    """Lesson 61: refuse an `into` the origin has; else clone, start, move the table
    across (core/recover.py), and always destroy the clone."""
    layout = Layout.from_stored(ctx.state["layout"])
    wanted = recovery.Target(**ctx.state["target"])
    origin = ctx.state["origin"]
    ssh = ctx.runner()
    found = ssh(recovery.exists(origin["socket_dir"], origin["port"], layout.origin.owner,
                                layout.origin.bin_dir, wanted), timeout=60, check=False)
    if not found.ok:
        return Fail(f"asking the origin about {wanted.recovered} failed: "
                    f"{(found.stderr or found.stdout).strip()[-800:]}", code="origin_failed")
    if found.stdout.strip() == "t":
        return Fail(f"{wanted.recovered} exists in database {wanted.database} already: "
                    "name another `into` (nothing was cloned, nothing overwritten)",
                    code="exists")
    refused = _no_room(ctx, ssh)
    if refused:
        return Fail(f"{refused} (nothing was cloned)", code="no_room")
    times: dict[str, float] = {}
    outcome: dict = {}
    try:
        if ctx.state.get("began"):
            ssh(commands.destroy(layout), timeout=120, check=False)
        ctx.state["began"] = True
        Operation.objects.filter(pk=ctx.operation.pk).update(state=ctx.state)
        outcome = _recover(ctx, ssh, layout, origin, wanted)
    except RemoteError as exc:
        outcome = {"error": f"the host did not answer: {exc}"}
    finally:
        gone = _destroy(ssh, layout, times)
        if gone:
            outcome["error"] = "; ".join(filter(None, [outcome.get("error"), gone]))
    if outcome.get("error"):
        return Fail(f"recovering {wanted.source} @{layout.snapshot} failed: "
                    f"{outcome['error'][-800:]}", code="recover_failed")
    ctx.log(f"destroyed clone {layout.name}")
    result = {"database": wanted.database, "table": wanted.source,
              "into": wanted.recovered, "rows": outcome["rows"], "snapshot": layout.snapshot}
    source = f"@{layout.snapshot}"
    if layout.recovery is not None:
        result |= {"moment": ctx.state.get("moment"), "reached_at": outcome.get("reached_at")}
        source = f"as of {layout.recovery.value}"
    return Done(result, message=f"recovered {wanted.source} {source} as "
                                f"{wanted.recovered}: {outcome['rows']} rows")


def _recover(ctx: StepContext, ssh, layout, origin: dict, wanted) -> dict:
    made = ssh(commands.create(layout, secrets.token_hex(16), identity(),
                               quota=ctx.state.get("quota")), timeout=600, check=False)
    if not made.ok:
        error, _ = core.split_log(made.stderr or made.stdout)
        return {"error": f"clone or start failed: {error}"}
    ctx.log(f"clone {layout.name} of @{layout.snapshot} answered on port {layout.port}")
    reached = _reached(ctx, layout, made.stdout)
    moved = ssh(recovery.recover(layout, origin["socket_dir"], origin["port"], wanted),
                timeout=3600, check=False)
    if not moved.ok:
        return {"error": (moved.stderr or moved.stdout).strip()[-TAIL:]}
    return {"rows": recovery.rows(moved.stdout), "reached_at": reached}


def _reached(ctx: StepContext, layout: Layout, stdout: str) -> str | None:
    """A point-in-time clone's last replayed transaction (ISO time), logged; None for a
    snapshot's clone, or when no transaction was replayed."""
    if layout.recovery is None:
        return None
    at = commands.reached(stdout)
    when = datetime.fromtimestamp(at, UTC).isoformat() if at is not None else None
    ctx.log(f"replayed to recovery_target_{layout.recovery.target} {layout.recovery.value}: "
            f"the last transaction replayed committed at {when or 'none (none replayed)'}")
    return when


RUN = register(Kind(name="drills.run", steps={"run": run}, first_step="run", mutating=False,
                    deadline=timedelta(hours=2)))
RECONCILE = register(Kind(name="drills.reconcile", steps={"reconcile": reconcile},
                          first_step="reconcile", mutating=False,
                          deadline=timedelta(minutes=30)))
RECOVER = register(Kind(name="drills.recover_table", steps={"recover": recover_table},
                        first_step="recover", mutating=False, deadline=timedelta(hours=2)))
