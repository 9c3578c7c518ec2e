"""The clone operations: create (snapshot first when asked for "now"), destroy.

Creation is one SSH round trip (`one_trip`): one script reads the pools' room
against their reserves, takes the snapshot "now" with snapshot now's own plan
and lists it (what the inventory records: the host's creation time and
properties), then makes the clone (apps.clones.core.commands.create: two `zfs
clone`, `pg_ctl start`, one psql). Its output comes back in sections, so the
step knows where a failed script stopped: at the room or the snapshot, nothing
was made; after the snapshot, the snapshot is recorded first and then goes
with the failed clone as any clone's own snapshots go (unless something else
holds it). If the clone fails halfway, whatever it made is destroyed by the
same command destroy runs, and the clone is marked failed with the host's
words. A run again after a dead worker goes the long way (room, snapshot now's
own step, which accepts the snapshot the first run took, then `clone`, which
removes what that run made). The inventory records the clone on its origin
snapshots at once (their `clones`), so no pruner tries them; the next listing
confirms it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone

from apps.clones.core import commands
from apps.clones.models import Clone
from apps.common import events
from apps.fleet import reserves
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, register
from apps.ops.models import LogLine, Operation
from apps.remote.commands import Command
from apps.remote.errors import RemoteError
from apps.snapshots.models import Snapshot

if TYPE_CHECKING:
    from apps.snapshots.steps import Taking

TAIL = 800


def _then(following: str):
    """The snapshot step of a kind: take the cluster's snapshot with snapshot now's own
    step when asked for "now", then run `following` in the same delivery (a second
    trip through the queue to the same worker would only add its latency; a step
    the sweeper re-delivers finds the snapshot taken and goes on)."""

    def snapshot(ctx: StepContext) -> Next | Done | Fail:
        from apps.snapshots import steps as snapshot_steps

        if following == "clone" and not ctx.state.get("began"):
            return _in_one_trip(ctx)
        try:
            shortage = reserves.refusal_in_step(ctx.runner(), ctx.host, ctx.state.get("room"))
        except RemoteError as exc:
            # The host went away before anything was made: the clone is failed, not
            # "creating" forever (as in clone() below).
            _failed(ctx, str(exc))
            raise
        if shortage:
            _failed(ctx, f"refused: {shortage.message}")
            return Fail(f"refused: {shortage.message}", code="no_room")
        if not ctx.state.get("take_snapshot"):
            # A clone's run again stays in this delivery, as its first run did.
            return clone(ctx) if following == "clone" else Next(following)
        outcome = snapshot_steps.take(ctx)
        if isinstance(outcome, Fail):
            _failed(ctx, outcome.error)
            return outcome
        ctx.log(outcome.message)
        ctx.progress(40, outcome.message)
        return {"clone": clone, "reset": reset}[following](ctx)

    return snapshot


def identity() -> dict[str, str]:
    """The user properties that say a clone dataset is this control plane's."""
    return {"pozol:owner": settings.POZOL["INSTANCE"]}


def one_trip(row: Clone, state: dict, host) -> tuple[Command, Taking | None]:
    """The clone's whole making as one script (apps.clones.core.commands.create_after):
    the pools' room check, the snapshot "now" and its listing when `state` asks for
    one, the clone; and the snapshot it takes. tests/bench/clone_ready.py runs the
    same script as its floor."""
    from apps.snapshots import steps as snapshot_steps

    chosen = snapshot_steps.taking(state) if state.get("take_snapshot") else None
    create = commands.create(row.decoded_layout(), row.decrypted_password(), identity(),
                             quota=row.quota)
    return commands.create_after(
        create, room=reserves.guard_in_script(host, state.get("room")),
        snapshot=chosen.command if chosen else None,
        listing=chosen.listing() if chosen else None), chosen


def _in_one_trip(ctx: StepContext) -> Done | Fail:
    """A clone's first run: one round trip (`one_trip`). A step run again after its
    worker died goes the long way (the snapshot step's own take, which accepts the
    snapshot its first run made, then `clone`, which removes what that run made)."""
    from apps.snapshots import steps as snapshot_steps

    row = Clone.objects.get(pk=ctx.state["clone"])
    command, chosen = one_trip(row, ctx.state, ctx.host)
    if chosen is not None:
        ctx.log(f"method {chosen.plan.method}: {chosen.plan.reason}")
    try:
        ctx.state["began"] = True
        Operation.objects.filter(pk=ctx.operation.pk).update(state=ctx.state)
        result = ctx.runner()(command, timeout=600, check=False)
    except RemoteError as exc:
        # The host went away: the clone is failed, not "creating" forever; what the
        # script may have made is the reconciler's (apps.drills.reconcile), and the
        # snapshot the next listing's (it carries pozol:owner and the clone's name).
        _failed(ctx, str(exc))
        raise
    parts = commands.sections(result.stdout)
    stopped = next(reversed(parts), None)
    if not result.ok and stopped in (None, "room"):
        shortage = (reserves.refusal_in_output(ctx.host, ctx.state["room"], parts["room"])
                    if stopped and ctx.state.get("room") else None)
        why = (f"refused: {shortage.message}" if shortage
               else f"nothing was made: {_tail(result)}")
        _failed(ctx, why)
        return Fail(why, code="no_room" if shortage else "clone_failed")
    if not result.ok and stopped == "snapshot":
        why = f"zfs snapshot failed: {_tail(result)}"
        _failed(ctx, why)
        return Fail(why, code="snapshot_failed")
    if chosen is not None:
        # Recorded before the clone's outcome is read: a failed clone's snapshots are
        # then destroyed as any clone's own snapshots are (_drop_own_snapshots).
        taken = snapshot_steps.took(ctx, chosen, parts.get("snapshot", ""),
                                    parts.get("listing"))
        ctx.log(taken.message)
        ctx.progress(40, taken.message)
    return _made(ctx, row, row.decoded_layout(), result)


def clone(ctx: StepContext) -> Done | Fail:
    row = Clone.objects.get(pk=ctx.state["clone"])
    layout = row.decoded_layout()
    try:
        run = ctx.runner()
        # A step the sweeper re-delivers (its worker died) starts from nothing: whatever
        # the first attempt made is removed first, so `zfs clone` never meets it.
        if ctx.state.get("began"):
            run(commands.destroy(layout), timeout=120, check=False)
        ctx.state["began"] = True
        Operation.objects.filter(pk=ctx.operation.pk).update(state=ctx.state)
        result = run(commands.create(layout, row.decrypted_password(), identity(), quota=row.quota),
                     timeout=300, check=False)
    except RemoteError as exc:
        # The host went away: the clone is failed, not "creating" forever; what the
        # script may have made is the reconciler's (apps.drills.reconcile).
        _failed(ctx, str(exc))
        raise
    return _made(ctx, row, layout, result)


def _tail(result) -> str:
    return (result.stderr or result.stdout).strip()[-TAIL:]


def _made(ctx: StepContext, row: Clone, layout, result) -> Done | Fail:
    """The clone script's outcome: ready, or failed with whatever it made removed."""
    run = ctx.runner()
    if not result.ok:
        why = (result.stderr or result.stdout).strip()[-TAIL:]
        run(commands.destroy(layout), timeout=120, check=False)
        ctx.log(f"removed what the failed clone had made ({layout.root})", LogLine.Level.WARNING)
        _drop_own_snapshots(ctx, row)
        _failed(ctx, why)
        return Fail(f"clone {row.name} failed: {why}", code="clone_failed")
    _note_clones(row, layout, add=True)
    now = timezone.now()
    replayed = {}
    if layout.recovery is not None:
        at = commands.reached(result.stdout)
        replayed["reached_at"] = datetime.fromtimestamp(at, UTC) if at is not None else None
        ctx.log(f"replayed to {layout.recovery.describe()}: the last transaction "
                "replayed committed at "
                f"{replayed['reached_at'] or 'none (no transaction replayed)'}")
    Clone.objects.filter(pk=row.pk).update(state=Clone.State.READY, ready_at=now, error="",
                                           connection_string=layout.connection_string(),
                                           **replayed)
    CLONE_READY.emit(event_subject(row), host=row.host_id, port=layout.port,
                     snapshot=layout.snapshot, operation=ctx.operation.pk)
    return Done({"clone": row.pk, "connection_string": layout.connection_string(),
                 "snapshot": layout.snapshot},
                message=f"clone {row.name} ready on port {layout.port}")


def reset(ctx: StepContext) -> Done | Fail:
    """Destroy the clone's datasets, then make them again from the new snapshot with the
    same name, port, role and password."""
    row = Clone.objects.get(pk=ctx.state["clone"])
    old = row.decoded_layout()
    result = ctx.runner()(commands.destroy(old), timeout=180, check=False)
    if not result.ok:
        why = (result.stderr or result.stdout).strip()[-TAIL:]
        _failed(ctx, why)
        return Fail(f"resetting clone {row.name} failed: {why}", code="reset_failed")
    _note_clones(row, old, add=False)
    _drop_own_snapshots(ctx, row)
    if "layout" in ctx.state:
        # On a link's target: to the moment the reset chose, replayed again.
        layout = ctx.state["layout"]
        target_time = datetime.fromisoformat(ctx.state["target_time"])
    else:
        # A reset copies a snapshot as it is: a point-in-time clone's replay is not
        # repeated.
        layout = {**{k: v for k, v in row.layout.items() if k != "recovery"},
                  "snapshot": ctx.state["new_snapshot"]}
        target_time = None
    Clone.objects.filter(pk=row.pk).update(
        snapshot=ctx.state["new_snapshot"], own_snapshots=ctx.state.get("own_snapshots", []),
        layout=layout, target_time=target_time, target_lsn="", target_name="",
        reached_at=None)
    ctx.log(f"removed {old.root} (was @{old.snapshot}); cloning @{ctx.state['new_snapshot']}")
    return clone(ctx)


def destroy(ctx: StepContext) -> Done | Fail:
    row = Clone.objects.get(pk=ctx.state["clone"])
    layout = row.decoded_layout()
    try:
        # Safe to run again (commands.destroy): a worker that died here leaves the
        # operation to the sweeper, whose re-run finishes what the first one began.
        result = ctx.runner()(commands.destroy(layout), timeout=180, check=False)
    except RemoteError as exc:
        # The host went away: the clone is failed, not "destroying" forever, so a
        # retry (the member's, or expiry's) can take it.
        _failed(ctx, str(exc))
        raise
    if not result.ok:
        why = (result.stderr or result.stdout).strip()[-TAIL:]
        _failed(ctx, why)
        return Fail(f"destroying clone {row.name} failed: {why}", code="destroy_failed")
    _note_clones(row, layout, add=False)
    _drop_own_snapshots(ctx, row)
    Clone.objects.filter(pk=row.pk).update(state=Clone.State.DESTROYED)
    CLONE_DESTROYED.emit(event_subject(row), host=row.host_id, operation=ctx.operation.pk)
    who = ctx.operation.triggered_by or ctx.operation.get_trigger_display()
    ctx.log(f"destroyed clone {row.name} ({layout.root}), asked by {who}")
    return Done({"clone": row.pk}, message=f"clone {row.name} destroyed")


def _note_clones(row: Clone, layout, *, add: bool) -> None:
    pairs = [(layout.origin.data_dataset, layout.data_clone)]
    if layout.wal_clone:
        pairs.append((layout.origin.wal_dataset, layout.wal_clone))
    for dataset, made in pairs:
        for snap in Snapshot.objects.filter(host=row.host, dataset=dataset, name=row.snapshot):
            clones = [c for c in snap.clones if c != made] + ([made] if add else [])
            Snapshot.objects.filter(pk=snap.pk).update(clones=clones)


def _drop_own_snapshots(ctx: StepContext, row: Clone) -> None:
    """The snapshots taken for this clone go with it, unless something else holds them
    (apps.snapshots.core.guards: a hold, another clone, a link, a policy) or another clone of
    PoZoL's was asked for from them and is not destroyed."""
    from apps.snapshots import steps as snapshot_steps

    if not row.own_snapshots:
        return
    heir = Clone.objects.filter(host=row.host, snapshot=row.snapshot,
                                cluster_data_dir=row.cluster_data_dir).exclude(
        pk=row.pk).exclude(state=Clone.State.DESTROYED).order_by("-created_at").first()
    if heir is not None:
        # Another clone was made from them: they go when the last such clone goes.
        Clone.objects.filter(pk=heir.pk).update(
            own_snapshots=sorted({*heir.own_snapshots, *row.own_snapshots}))
        ctx.log(f"kept {', '.join(row.own_snapshots)}: clone {heir.name} is made from them")
    else:
        snapshot_steps.destroy_taken(ctx, row.own_snapshots)
    Clone.objects.filter(pk=row.pk).update(own_snapshots=[])


def _failed(ctx: StepContext, why: str) -> None:
    Clone.objects.filter(pk=ctx.state["clone"]).update(state=Clone.State.FAILED,
                                                       error=why[-4000:])
    row = Clone.objects.only("pk", "name", "host_id").get(pk=ctx.state["clone"])
    CLONE_FAILED.emit(event_subject(row), host=row.host_id, error=why[-1000:],
                      operation=ctx.operation.pk)


def event_subject(row: Clone) -> dict:
    return {"type": "clone", "id": row.pk, "name": row.name}


# Automation hears of these (apps/events); the registry is apps/common/events.py.
CLONE_READY = events.register(events.EventKind("clone.ready", "A clone is ready"))
CLONE_FAILED = events.register(events.EventKind("clone.failed", "A clone failed"))
CLONE_DESTROYED = events.register(events.EventKind("clone.destroyed", "A clone was destroyed"))


CREATE = register(Kind(name="clones.create", steps={"snapshot": _then("clone"), "clone": clone},
                       first_step="snapshot", mutating=False, deadline=timedelta(minutes=30)))
RESET = register(Kind(name="clones.reset", steps={"snapshot": _then("reset"),
                                                  "reset": reset},
                      first_step="snapshot", mutating=False, deadline=timedelta(minutes=30)))
DESTROY = register(Kind(name="clones.destroy", steps={"destroy": destroy},
                        first_step="destroy", mutating=False, deadline=timedelta(minutes=30)))
