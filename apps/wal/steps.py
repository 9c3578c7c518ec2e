"""The WAL archiving operations: enable, disable, refresh the command, check.

`wal.enable` reads the three settings it will change before it writes anything (kept
on the archive's row, so disabling gives them back), makes the archive dataset, writes
archive_mode/archive_command/archive_timeout by ALTER SYSTEM, restarts the cluster
through its own ClusterTarget.control (archive_mode needs a restart; the other two a
reload), reads them back and switches to a new segment so the archive receives one at
once. A failure after the first write leads to `restore`, which writes the
before-values back and restarts again before the operation fails. `wal.disable` is the
same road back; the archive dataset and its WAL are kept. Both are mutating: they
restart PostgreSQL, so they wait behind a benchmark or a tuning apply.
`wal.refresh_command` writes the archive_command PoZoL writes now (for an archive
enabled by an older PoZoL, or whose command was changed by hand), a reload.

`wal.check` (not mutating) reads pg_stat_archiver and lists the archive in one round
trip, removes what no kept snapshot needs (core/window.removable) and the replay
snapshots left by clones that are gone, and records the window, the gaps and the alert
(apps/wal/inspection.py). An operator's "check now" starts it; the wal tick reads
without an Operation and starts one only when something must be removed.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone

from apps.ops import remote_jobs
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, Wait, register
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import InvalidValue
from apps.remote.errors import RemoteError
from apps.snapshots import inventory
from apps.snapshots.core import commands as snapshot_commands
from apps.wal import alerting, inspection
from apps.wal.core import commands
from apps.wal.core import plan as archive_plan
from apps.wal.core.window import gaps
from apps.wal.models import RestorePoint, WalArchive, WalMark


def _archive(ctx: StepContext) -> WalArchive:
    return WalArchive.objects.select_related("cluster__host").get(pk=ctx.state["archive"])


def _target(ctx: StepContext) -> ClusterTarget:
    return ClusterTarget.of(**ctx.state["target"])


# ---- enable --------------------------------------------------------------------------

def begin(ctx: StepContext) -> Next:
    """The before-values, read once: a step run again keeps the first reading."""
    if "before" not in ctx.state:
        before = commands.parse_settings(ctx.runner()(commands.read_settings(_target(ctx))).stdout)
        ctx.state["before"] = before
        WalArchive.objects.filter(pk=ctx.state["archive"]).update(before=before)
        ctx.log("before: " + "; ".join(f"{n} = {r['value']!r}" for n, r in before.items()))
    return Next("make", progress=10)


def make(ctx: StepContext) -> Next | Fail:
    archive = _archive(ctx)
    target = _target(ctx)
    out = ctx.runner()(commands.make_dataset(archive.dataset, target.owner,
                                             archive.cluster.data_dir)).stdout
    directory = out.strip().splitlines()[-1]
    try:
        archive_plan.archive_command(directory)  # its characters, and its length
    except InvalidValue as exc:
        # Nothing of the cluster's is written yet: no restore, no restart.
        error = (f"the archive is mounted at {directory}, which PoZoL cannot archive into: "
                 f"{exc.reason}")
        WalArchive.objects.filter(pk=archive.pk).update(state=WalArchive.State.FAILED,
                                                        error=error)
        return Fail(error, code="bad_directory")
    WalArchive.objects.filter(pk=archive.pk).update(directory=directory)
    ctx.state["directory"] = directory
    return Next("write", f"archive {archive.dataset} mounted at {directory}", progress=30)


def write(ctx: StepContext) -> Next:
    values = {"archive_mode": "on",
              "archive_command": archive_plan.archive_command(ctx.state["directory"]),
              "archive_timeout": str(ctx.state["timeout"])}
    ctx.state["written"] = True
    try:
        ctx.runner()(commands.write_settings(_target(ctx), values))
    except RemoteError as exc:
        return _restore_after(ctx, f"ALTER SYSTEM failed: {exc}")
    ctx.state["expected"] = values
    return Next("apply", progress=50)


def apply(ctx: StepContext) -> Next | Wait:
    """Restart when archive_mode changes (it needs one), else the reload already done."""
    if not _needs_restart(ctx):
        ctx.log("archive_mode was on already: the reload took archive_command and "
                "archive_timeout, no restart")
        return Next("verify", progress=80)
    status = remote_jobs.advance(ctx, "restart", _target(ctx).control("restart"))
    if status.state == "running":
        return Wait(1, message="restarting PostgreSQL")
    if status.state != "succeeded":
        return _restore_after(ctx, f"the restart ended {status.state} "
                                   f"(exit {status.exit_code})")
    return Next("verify", "PostgreSQL restarted", progress=80)


def verify(ctx: StepContext) -> Next:
    run = ctx.runner()
    try:
        now = commands.parse_settings(run(commands.read_settings(_target(ctx))).stdout)
    except RemoteError as exc:
        return _restore_after(ctx, f"could not read the settings back: {exc}")
    wrong = {n: r["value"] for n, r in now.items() if r["value"] != ctx.state["expected"][n]}
    if wrong:
        return _restore_after(ctx, "the cluster reads " + "; ".join(
            f"{n} = {v!r}" for n, v in wrong.items()))
    # A new segment, so the archive receives one now rather than after archive_timeout.
    run(commands.switch(_target(ctx)), check=False)
    return Next("finish", progress=95)


def finish(ctx: StepContext) -> Done:
    WalArchive.objects.filter(pk=ctx.state["archive"]).update(
        state=WalArchive.State.ON, error="", enabled_at=timezone.now())
    return Done({"archive": ctx.state["archive"], "directory": ctx.state["directory"]},
                message=f"archiving into {ctx.state['directory']}")


def restore(ctx: StepContext) -> Wait | Fail:
    """Write the before-values back, restart if archive_mode was changed, then fail with
    the first error."""
    if not ctx.state.get("restored"):
        ctx.runner()(commands.write_settings(_target(ctx),
                                             commands.restoring(ctx.state["before"])))
        ctx.state["restored"] = True
        ctx.log("the settings from before are written back")
    if _needs_restart(ctx):
        status = remote_jobs.advance(ctx, "restore-restart", _target(ctx).control("restart"))
        if status.state == "running":
            return Wait(1, message="restarting PostgreSQL with the settings from before")
    error = ctx.state["error"]
    WalArchive.objects.filter(pk=ctx.state["archive"]).update(
        state=WalArchive.State.FAILED, error=error)
    return Fail(f"{error}; the settings from before were restored", code="wal_failed")


def _needs_restart(ctx: StepContext) -> bool:
    return (ctx.state["before"].get("archive_mode") or {}).get("value") != "on"


def _restore_after(ctx: StepContext, error: str) -> Next:
    ctx.state.setdefault("error", error)
    ctx.log(error, "error")
    return Next("restore")


# ---- disable -------------------------------------------------------------------------

def disable_write(ctx: StepContext) -> Next:
    archive = _archive(ctx)
    ctx.runner()(commands.write_settings(_target(ctx), commands.restoring(archive.before)))
    ctx.log("the settings from before archiving are written back; the archive "
            f"{archive.dataset} and its WAL are kept")
    return Next("disable_apply", progress=40)


def disable_apply(ctx: StepContext) -> Next | Wait | Fail:
    archive = _archive(ctx)
    if (archive.before.get("archive_mode") or {}).get("value") == "on":
        return Next("disable_finish")
    status = remote_jobs.advance(ctx, "restart", _target(ctx).control("restart"))
    if status.state == "running":
        return Wait(1, message="restarting PostgreSQL")
    if status.state != "succeeded":
        return Fail(f"the restart ended {status.state} (exit {status.exit_code})",
                    code="restart_failed")
    return Next("disable_finish", "PostgreSQL restarted", progress=80)


def disable_finish(ctx: StepContext) -> Done | Fail:
    archive = _archive(ctx)
    now = commands.parse_settings(ctx.runner()(commands.read_settings(_target(ctx))).stdout)
    wrong = {n: r["value"] for n, r in now.items()
             if r["value"] != (archive.before.get(n) or {}).get("value")}
    if wrong:
        return Fail("after the restore the cluster reads " + "; ".join(
            f"{n} = {v!r}" for n, v in wrong.items()), code="not_restored")
    WalArchive.objects.filter(pk=archive.pk).update(state=WalArchive.State.OFF, error="")
    alerting.update(archive.cluster.host)
    return Done({"archive": archive.pk}, message="archiving off, settings from before back")


# ---- refresh the command --------------------------------------------------------------

def refresh_write(ctx: StepContext) -> Next:
    """ALTER SYSTEM of archive_command alone, and a reload: the archiver takes it at its
    next segment; nothing else changes (archive_mode stays on: no restart)."""
    command = archive_plan.archive_command(ctx.state["directory"])
    ctx.runner()(commands.write_settings(_target(ctx), {"archive_command": command}))
    ctx.state["expected"] = {"archive_command": command}
    return Next("refresh_verify", "archive_command written, configuration reloaded",
                progress=60)


def refresh_verify(ctx: StepContext) -> Done | Fail:
    now = commands.parse_settings(ctx.runner()(commands.read_settings(_target(ctx))).stdout)
    found = (now.get("archive_command") or {}).get("value")
    if found != ctx.state["expected"]["archive_command"]:
        return Fail(f"after the reload the cluster reads archive_command = {found!r}",
                    code="not_refreshed")
    WalArchive.objects.filter(pk=ctx.state["archive"]).update(command_outdated=False)
    return Done({"archive": ctx.state["archive"]},
                message="archiving with PoZoL's current archive_command")


# ---- check ---------------------------------------------------------------------------

def check(ctx: StepContext) -> Done | Fail:
    """Read the archive, remove what no kept snapshot needs (logging each command), and
    record what is left."""
    archive = _archive(ctx)
    run = ctx.runner()
    status = inspection.read(archive, run)
    if not status.mounted:
        return Fail(inspection.not_mounted(archive), code="not_mounted")
    found = inspection.assess(archive, status)
    refused = False
    for row in found.stale_replays:
        result = run(snapshot_commands.destroy(row.full_name), check=False)
        if result.ok:
            ctx.log(f"destroyed {row.full_name}, left by a clone's replay that is over")
            row.delete()
        else:
            ctx.log(f"kept {row.full_name}: {result.stderr.strip()[-200:]}", "warning")
            refused = True
    if refused:
        # The host listed again (a snapshot's clones are read from the datasets'
        # origins): a clone of a kept one, the usual reason, is then on record, and the
        # tick leaves it to that clone's destroy instead of trying every minute.
        inventory.refresh(ctx.host, run)
    size = status.archiver.segment_size
    for command in commands.remove(archive.directory or status.mountpoint,
                                   [a.segment.name(size) for a in found.going]):
        run(command)
    if found.going:
        ctx.log(f"removed {len(found.going)} segments older than what the oldest snapshot "
                "needs")
    described = inspection.record(archive, found, removed=len(found.going))
    kept = len(found.segments) - len(found.going)
    return Done({"segments": kept, "removed": len(found.going),
                 "gaps": len(gaps(found.segments[len(found.going):])),
                 "failed_count": status.archiver.failed_count},
                message=f"{kept} segments; window: {described}")


# ---- restore points --------------------------------------------------------------------

def restore_point(ctx: StepContext) -> Done:
    archive = _archive(ctx)
    name = ctx.state["name"]
    lsn, at = commands.parse_mark(
        ctx.runner()(commands.restore_point(_target(ctx), name)).stdout)
    RestorePoint.objects.update_or_create(archive=archive, name=name, defaults={
        "lsn": lsn, "created_at": datetime.fromtimestamp(at, UTC)})
    return Done({"name": name, "lsn": lsn}, message=f"restore point {name} at {lsn}")


# ---- a snapshot's place in WAL ---------------------------------------------------------

def mark_snapshot(ctx: StepContext, datasets: list[str], name: str) -> None:
    """Told by the snapshot engine after it took `name` of `datasets`: for a cluster
    that archives, where its WAL stands now (after the snapshot: so no later than it
    could be). Never fails the snapshot."""
    for archive in WalArchive.objects.filter(
            cluster__host=ctx.host, state=WalArchive.State.ON,
            cluster__data_dataset__name__in=datasets).select_related("cluster__host"):
        try:
            lsn, at = commands.parse_mark(
                ctx.runner()(commands.mark(archive.cluster.target())).stdout)
        except (RemoteError, ValueError) as exc:
            ctx.log(f"could not read the WAL position after @{name}: {exc}", "warning")
            continue
        WalMark.objects.update_or_create(archive=archive, snapshot=name, defaults={
            "lsn": lsn, "taken_at": datetime.fromtimestamp(at, UTC)})
        ctx.log(f"@{name}: the WAL of {archive.cluster.data_dir} was at {lsn}")


ENABLE = register(Kind(
    name="wal.enable",
    steps={"begin": begin, "make": make, "write": write, "apply": apply, "verify": verify,
           "finish": finish, "restore": restore},
    first_step="begin",
    mutating=True,
))
DISABLE = register(Kind(
    name="wal.disable",
    steps={"disable_write": disable_write, "disable_apply": disable_apply,
           "disable_finish": disable_finish},
    first_step="disable_write",
    mutating=True,
))
REFRESH = register(Kind(
    name="wal.refresh_command",
    steps={"refresh_write": refresh_write, "refresh_verify": refresh_verify},
    first_step="refresh_write",
    mutating=True,  # ALTER SYSTEM: not beside a tuning apply writing the same file
))
RESTORE_POINT = register(Kind(name="wal.restore_point", steps={"restore_point": restore_point},
                             first_step="restore_point", mutating=False))
CHECK = register(Kind(name="wal.check", steps={"check": check}, first_step="check",
                      mutating=False))
