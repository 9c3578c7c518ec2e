"""The snapshot operations: take, destroy, hold/release, and refresh the inventory.

Each ends by listing the host again (one `zfs get`), so the inventory shows
what ZFS has, including what others did meanwhile; taking a snapshot lists
just the snapshots it made (one `zfs get` of those names), so "snapshot now"
costs the same on a host with 10,000 snapshots. `taking` and `took` are the two
halves of `take` around its command, so a clone "now" (apps.clones.steps) runs
the snapshot and its listing inside its own script and records them as here. None is mutating in the
engine's sense: a snapshot, a hold or a destroy does not disturb a tuning
apply or a benchmark (a snapshot under load is the point), and ZFS serialises
its own administrative commands; serialising them behind a one-hour pgbench
would make "snapshot now" useless.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from apps.fleet import reserves
from apps.ops import remote_jobs
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, Wait, register
from apps.remote import snapshot_plan as plan
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import Command, script
from apps.remote.facts.snapshots import already_exists, is_busy, parse_listing
from apps.snapshots import inventory, protection, pruning
from apps.snapshots.core import commands, guards, naming
from apps.snapshots.core.policy import Policy
from apps.snapshots.core.rollback import Listed, plan_rollback

TAIL = 600
PG_CTL_SECONDS = 180  # pg_ctl's own -t is 120


@dataclass(frozen=True)
class Taking:
    """A snapshot to take, from a step's state: its plan, the command, what it makes."""

    plan: plan.SnapshotPlan
    name: str
    command: Command
    taken: list[str]  # every snapshot it makes, full names

    def listing(self) -> Command:
        """The listing `took` records them from (one `zfs get` of just these)."""
        return commands.listing(self.taken)


def taking(state: dict) -> Taking:
    """The snapshot a step's `state` asks for (snapshot now's, a policy's, a clone's)."""
    chosen = plan.SnapshotPlan(**{**state["plan"], "datasets": tuple(
        state["plan"]["datasets"]), "covered": tuple(state["plan"]["covered"])})
    name = state["snapshot"]
    return Taking(chosen, name, _snapshot_command(state, chosen, name),
                  [f"{dataset}@{name}" for dataset in chosen.covered])


def take(ctx: StepContext) -> Done | Fail:
    chosen = taking(ctx.state)
    ctx.log(f"method {chosen.plan.method}: {chosen.plan.reason}")
    run = ctx.runner()
    if ctx.state.get("checkpoint"):
        run(commands.checkpoint(_target(ctx.state)), timeout=600)
        ctx.log("CHECKPOINT done before the snapshot")
    result = run(chosen.command, timeout=300, check=False)
    if not result.ok and not (already_exists(result.stderr)
                              and _taken_before(ctx, chosen.plan, chosen.name)):
        return Fail(f"zfs snapshot failed: {_tail(result)}", code="snapshot_failed")
    if ctx.state.get("hold"):
        _hold(ctx, run, chosen.taken)
    return took(ctx, chosen, result.stdout if result.ok else None)


def took(ctx: StepContext, chosen: Taking, said: str | None,
         listed: str | None = None) -> Done:
    """After `chosen.command` ran (`said`: its output, None when an earlier run of the
    step made the snapshots): recorded from `listed` (`chosen.listing()`'s output, run
    by the caller) or from a listing of its own, and told to the takers."""
    if chosen.plan.method == plan.BACKUP and said is not None:
        ctx.log("backup_label returned by pg_backup_stop (a restore from these snapshots "
                "needs it as backup_label in the data directory):\n" + said.strip())
    run = ctx.runner()
    listed_names = {row.full_name for row in parse_listing(listed or "")}
    if listed is not None and set(chosen.taken) <= listed_names:
        recorded = inventory.add_listed(ctx.host, run, listed)
    else:
        recorded = inventory.add(ctx.host, run, chosen.taken)
    protection.snapshot_taken(ctx, list(chosen.plan.covered), chosen.name)
    held = bool(ctx.state.get("hold"))
    return Done({"snapshots": chosen.taken, "method": chosen.plan.method, "held": held,
                 "recorded": recorded},
                message=f"{len(chosen.taken)} snapshot{'s' if len(chosen.taken) > 1 else ''} "
                        f"@{chosen.name} ({chosen.plan.method})")


def take_now(ctx: StepContext) -> Done | Fail:
    """Snapshot now: the pool's room against its reserve, read on the host, first (a
    policy's snapshot is not refused: it is what a restore would need)."""
    shortage = reserves.refusal_in_step(ctx.runner(), ctx.host, ctx.state.get("room"))
    if shortage:
        return Fail(f"refused: {shortage.message}", code="no_room")
    return take(ctx)


def destroy_taken(ctx: StepContext, full_names: list[str], *,
                  used_by: dict[str, str] | None = None) -> list[str]:
    """Destroy the snapshots PoZoL took for something now gone (a clone's "now"), all or
    none (data and WAL are one moment), unless apps.snapshots.core.guards keeps one: held,
    cloned, protected, owned by a policy, or in `used_by` (full name -> what uses it).
    Returns what was destroyed; why not is logged."""
    run = ctx.runner()
    rows = {row.full_name: row for row in inventory.list_host(run)}
    present = [name for name in full_names if name in rows]
    spared = protection.protected(ctx.host, sorted({rows[n].dataset for n in present}))
    for name in present:
        row = rows[name]
        refusal = guards.cleanup_refusal(
            full_name=name, userrefs=row.userrefs, clones=row.clones, origin=row.origin,
            policy=row.properties.get("pozol:policy", ""), manual=naming.MANUAL,
            protected=spared, used_by=(used_by or {}).get(name))
        if refusal:
            ctx.log(f"kept {', '.join(present)}: {refusal.message}")
            return []
    destroyed = []
    for name in present:
        result = run(commands.destroy(name), check=False)
        if not result.ok:
            ctx.log(f"could not destroy {name}: {_tail(result)}", "warning")
            break
        destroyed.append(name)
    if destroyed:
        ctx.log(f"destroyed {', '.join(destroyed)}, taken for what is now gone")
    inventory.record(ctx.host, [row for name, row in rows.items() if name not in destroyed])
    return destroyed


def take_for_policy(ctx: StepContext) -> Next | Fail:
    """A policy's snapshot, then its prune in the same operation (one per target)."""
    outcome = take(ctx)
    if isinstance(outcome, Fail):
        return outcome
    ctx.state["taken"] = outcome.result["snapshots"]
    return Next("prune", message=outcome.message, progress=50)


def prune(ctx: StepContext) -> Done:
    """Destroy what the policy no longer keeps, each logged; a refused or busy destroy
    is reported and skipped (the next run plans again from a fresh listing)."""
    run = ctx.runner()
    rows = inventory.list_host(run)
    inventory.record(ctx.host, rows)
    policy = Policy(**ctx.state["policy"])
    covered = list(ctx.state["plan"]["covered"])
    spared = protection.protected(ctx.host, covered)
    chosen = pruning.prune_plan(policy, rows, covered,
                                datetime.fromisoformat(ctx.state["now"]), spared)
    by_name = {row.full_name: row for row in rows}
    destroyed, skipped = [], []
    for snapshot in chosen.destroy:
        row = by_name[snapshot.full_name]
        refusal = guards.destroy_refusal(full_name=row.full_name, userrefs=row.userrefs,
                                         clones=row.clones, origin=row.origin, force=False,
                                         protected=spared)
        result = None if refusal else run(commands.destroy(row.full_name), check=False)
        if refusal or not result.ok:
            why = refusal.message if refusal else _tail(result)
            ctx.log(f"skipped {row.full_name}: {why}", level="warning")
            skipped.append({"snapshot": row.full_name, "reason": why})
            continue
        ctx.log(f"destroyed {row.full_name} (policy {policy.name})")
        destroyed.append(row.full_name)
    if destroyed:
        inventory.refresh(ctx.host, run)
    protection.policy_snapshot_taken(ctx.host, covered)
    return Done({"snapshots": ctx.state.get("taken", []), "destroyed": destroyed,
                 "skipped": skipped},
                message=f"took @{ctx.state['snapshot']}, destroyed {len(destroyed)}"
                        + (f", skipped {len(skipped)}" if skipped else ""))


def _snapshot_command(state: dict, chosen: plan.SnapshotPlan, name: str) -> Command:
    properties = state["properties"]
    if chosen.method == plan.RECURSIVE:
        return commands.take(chosen.names(name), properties, recursive=True)
    if chosen.method in (plan.SINGLE, plan.MULTI):
        return commands.take(chosen.names(name), properties)
    each = [commands.take([full], properties) for full in chosen.names(name)]
    both = script("{first} && {second}", first=each[0], second=each[1])
    return commands.in_backup_mode(_target(state), state.get("server_version_num"), name,
                                   both)


def _taken_before(ctx: StepContext, chosen: plan.SnapshotPlan, name: str) -> bool:
    """The step ran again after its snapshot was made (a worker died): not a failure."""
    rows = {row.full_name: row for row in inventory.list_host(ctx.runner())}
    ours = all(f"{dataset}@{name}" in rows
               and rows[f"{dataset}@{name}"].properties.get("pozol:owner")
               for dataset in chosen.datasets)
    if ours:
        ctx.log(f"@{name} already exists with pozol:owner: taken by an earlier run of this step")
    return ours


def _hold(ctx: StepContext, run, names: list[str]) -> None:
    for full_name in names:
        result = run(commands.hold([full_name]), check=False)
        if not result.ok and "tag already exists" not in result.stderr:
            result.check()
    ctx.log(f"held with tag '{commands.HOLD_TAG}': {', '.join(names)}")


def destroy(ctx: StepContext) -> Done | Fail:
    run = ctx.runner()
    full_name = ctx.state["snapshot"]
    rows = inventory.list_host(run)
    inventory.record(ctx.host, rows)
    row = next((r for r in rows if r.full_name == full_name), None)
    if row is None:
        return Done({"destroyed": full_name, "already_gone": True},
                    message=f"{full_name} no longer exists")
    refusal = guards.destroy_refusal(full_name=full_name, userrefs=row.userrefs,
                                     clones=row.clones, origin=row.origin,
                                     force=bool(ctx.state.get("force")),
                                     protected=protection.protected(ctx.host, [row.dataset]))
    if refusal:
        return Fail(refusal.message, code=refusal.code)
    result = run(commands.destroy(full_name), check=False)
    if not result.ok:
        code = "busy" if is_busy(result.stderr) else "destroy_failed"
        return Fail(f"zfs destroy {full_name} failed, skipped: {_tail(result)}", code=code)
    who = ctx.operation.triggered_by or ctx.operation.get_trigger_display()
    ctx.log(f"destroyed {full_name}, asked by {who}")
    inventory.refresh(ctx.host, run)
    return Done({"destroyed": full_name}, message=f"destroyed {full_name}")


def hold(ctx: StepContext) -> Done | Fail:
    run = ctx.runner()
    full_name, action = ctx.state["snapshot"], ctx.state["action"]
    if action == "hold":
        _hold(ctx, run, [full_name])
    else:
        result = run(commands.release(full_name), check=False)
        if not result.ok:
            if "no such tag" in result.stderr:
                return Fail(f"{full_name} has no hold tagged '{commands.HOLD_TAG}' (holds "
                            "under other tags are not PoZoL's to release)", code="not_held")
            return Fail(f"zfs release failed: {_tail(result)}", code="release_failed")
        ctx.log(f"released the '{commands.HOLD_TAG}' hold on {full_name}")
    inventory.refresh(ctx.host, run)
    return Done({"snapshot": full_name, "action": action}, message=f"{action} {full_name}")


def refresh(ctx: StepContext) -> Done:
    summary = inventory.refresh(ctx.host, ctx.runner())
    return Done(summary, message=f"{summary['snapshots']} snapshots listed")


def rollback_stop(ctx: StepContext) -> Next | Fail:
    """The plan checked again against the host's own listing (a hold or a clone may have
    appeared since the request), then PostgreSQL stopped."""
    run = ctx.runner()
    rows = inventory.list_host(run)
    inventory.record(ctx.host, rows)
    datasets = ctx.state["datasets"]
    mine = {row.full_name: row for row in rows if row.dataset in datasets}
    chosen = plan_rollback(datasets, ctx.state["snapshot"],
                           [Listed(row.dataset, row.name, row.creation) for row in mine.values()])
    refusal = guards.rollback_refusal(chosen, mine,
                                      destroy_newer=bool(ctx.state.get("destroy_newer")),
                                      protected=protection.protected(ctx.host, datasets))
    if refusal:
        return Fail(f"{refusal.message}; nothing was changed", code=refusal.code)
    ctx.state["snapshots"] = list(chosen.snapshots)
    ctx.state["destroys"] = list(chosen.newer)
    ctx.state["parents"] = _parents_taken_with(rows, datasets, chosen.newer)
    result = run(_target(ctx.state).control("stop"), timeout=PG_CTL_SECONDS, check=False)
    if not result.ok and "Is server running?" not in result.stderr:
        return Fail(f"pg_ctl stop failed; nothing was rolled back: {_tail(result)}",
                    code="stop_failed")
    return Next("rollback", "PostgreSQL stopped", progress=30)


def rollback_datasets(ctx: StepContext) -> Next | Fail:
    run = ctx.runner()
    done = ctx.state.setdefault("rolled_back", [])
    for full_name in ctx.state["snapshots"]:
        if full_name in done:
            continue  # a step run again after a lost worker
        result = run(commands.rollback(full_name,
                                       destroy_newer=bool(ctx.state.get("destroy_newer"))),
                     timeout=600, check=False)
        if not result.ok:
            return _rollback_failed(ctx, full_name, result)
        done.append(full_name)
        ctx.log(f"rolled back to {full_name}")
    if ctx.state["destroys"]:
        ctx.log("destroyed the newer snapshots: " + ", ".join(ctx.state["destroys"]))
    for full_name in ctx.state["parents"]:
        result = run(commands.destroy(full_name), check=False)
        ctx.log(f"destroyed {full_name}, taken with them" if result.ok else
                f"kept {full_name} (taken with them): {_tail(result)}")
    return Next("start", "datasets rolled back", progress=60)


def _parents_taken_with(rows, datasets: list[str], newer: tuple[str, ...]) -> list[str]:
    """The snapshots of the datasets' parents that one `zfs snapshot -r` took with the
    newer snapshots (zfs-fuse snapshots a cluster through its common parent): they go
    with them, unless held or cloned."""
    names = {full_name.partition("@")[2] for full_name in newer}
    parents = {row.dataset for row in rows
               if any(dataset.startswith(row.dataset + "/") for dataset in datasets)}
    return sorted(row.full_name for row in rows
                  if row.dataset in parents and row.name in names and row.origin == "pozol"
                  and not row.userrefs and not row.clones)


def _rollback_failed(ctx: StepContext, full_name: str, result) -> Next | Fail:
    ctx.state["failed"] = f"zfs rollback {full_name} failed: {_tail(result)}"
    if not ctx.state["rolled_back"]:
        ctx.log(ctx.state["failed"] + "; nothing was rolled back, starting PostgreSQL again")
        return Next("start", "rollback failed")
    # Data of one moment and WAL of another must never meet in a running server.
    return Fail(ctx.state["failed"] + f"; {', '.join(ctx.state['rolled_back'])} were rolled "
            "back already, so PostgreSQL is left stopped: roll back again (or to another "
            "snapshot of the pair) before starting it", code="rollback_failed")


def rollback_start(ctx: StepContext) -> Done | Wait | Fail:
    """PostgreSQL started detached (it recovers as after a crash) and asked to answer."""
    target = _target(ctx.state)
    status = remote_jobs.advance(ctx, "start", target.control("start"))
    if status.state == "running":
        return Wait(0.5, message="starting PostgreSQL")
    run = ctx.runner()
    if not run(target.psql("SELECT 1"), check=False).ok:
        if status.state == "succeeded":
            # pg_ctl -w returns before crash recovery lets clients in on PostgreSQL 15.
            return Wait(0.5, message="PostgreSQL is recovering")
        said = "".join(remote_jobs.output(ctx, "start", stream=stream)[0]
                       for stream in ("stdout", "stderr")).strip()[-TAIL:]
        return Fail(f"PostgreSQL did not start after the rollback: pg_ctl start ended "
                    f"{status.state} (exit {status.exit_code}): {said}", code="start_failed")
    inventory.refresh(ctx.host, run)
    if ctx.state.get("failed"):
        return Fail(ctx.state["failed"] + "; PostgreSQL runs on what was there",
                    code="rollback_failed")
    return Done({"snapshots": ctx.state["snapshots"], "destroyed": ctx.state["destroys"]},
                message=f"rolled back to @{ctx.state['snapshot']}")


def _target(state: dict) -> ClusterTarget:
    return ClusterTarget.of(**state["target"])


def _tail(result) -> str:
    return (result.stderr or result.stdout).strip()[-TAIL:]


TAKE = register(Kind(name="snapshots.take", steps={"take": take_now}, first_step="take",
                     mutating=False, deadline=timedelta(minutes=30)))
DESTROY = register(Kind(name="snapshots.destroy", steps={"destroy": destroy},
                        first_step="destroy", mutating=False, deadline=timedelta(minutes=30)))
HOLD = register(Kind(name="snapshots.hold", steps={"hold": hold}, first_step="hold",
                     mutating=False, deadline=timedelta(minutes=10)))
ROLLBACK = register(Kind(name="snapshots.rollback", steps={
    "stop": rollback_stop, "rollback": rollback_datasets, "start": rollback_start},
    first_step="stop", mutating=True, deadline=timedelta(minutes=30)))
REFRESH = register(Kind(name="snapshots.refresh", steps={"refresh": refresh},
                        first_step="refresh", mutating=False, deadline=timedelta(minutes=30)))
POLICY = register(Kind(name="snapshots.policy", steps={"take": take_for_policy, "prune": prune},
                       first_step="take", mutating=False, deadline=timedelta(minutes=30)))
