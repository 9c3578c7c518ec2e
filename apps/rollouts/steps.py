"""A rollout as one Operation, `rollout.run`, whose steps drive child operations.

Steps: `baseline` (every host discovered and what the profile would change on it
recorded), `wave` (the current wave's hosts advanced, each by its own child
operations: a discovery, tuning's apply, a discovery again, then the validation
here), `roll_back` (after a stop: tuning's rollback of the chosen hosts' plans).
Each step reads the rows, starts what is due and returns Wait while children run;
a child is started and recorded on its host's row in one transaction, so a step
that runs again (a worker killed, its lease taken over) finds it and waits for it
rather than starting a second one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.alerts.models import Alert
from apps.benchmarks import services as benchmarks
from apps.common import events
from apps.fleet import services as fleet
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, Wait, register
from apps.ops.models import Operation
from apps.remote import ssh
from apps.remote.commands import InvalidValue
from apps.remote.errors import RemoteError
from apps.rollouts.core import waves
from apps.rollouts.models import Rollout, RolloutHost
from apps.tuning import services as tuning
from apps.tuning.models import Plan, PlanChange
from apps.tuning.steps import LAYERS, reads_as

WAVE_DONE = events.register(events.EventKind(
    "rollout.wave_done", "A rollout's wave passed: every host in it applied and validated"))
STOPPED = events.register(events.EventKind(
    "rollout.stopped", "A rollout stopped on a failure and rolled its hosts back"))

POLL_SECONDS = 2
PAUSED_POLL_SECONDS = 60
State = RolloutHost.State


def _rollout(ctx: StepContext) -> Rollout:
    return Rollout.objects.select_related("profile_version__profile").get(
        pk=ctx.state["rollout"])


def _rows(rollout: Rollout, **filters) -> list[RolloutHost]:
    return list(rollout.hosts.filter(**filters)
                .select_related("host", "operation", "plan", "bench_before", "bench_after")
                .order_by("position"))


def _set(row: RolloutHost, state: str, reason: str | None = None, **fields) -> None:
    child = fields.get("operation")
    if child is not None:  # its end wakes the rollout, which then need not poll
        Operation.objects.filter(pk=child.pk).update(waiter=row.rollout.operation_id)
    row.state = state
    if reason is not None:
        row.reason = reason[:4000]
    for name, value in fields.items():
        setattr(row, name, value)
    row.save()


def _start(row: RolloutHost, state: str, start: Callable[[], Operation], **fields) -> None:
    """The child and the row that waits for it, committed together."""
    with transaction.atomic():
        _set(row, state, operation=start(), **fields)


def _child(row: RolloutHost) -> Operation | None:
    """The child's status as it is now, or None while it runs."""
    child = Operation.objects.get(pk=row.operation_id)
    return None if child.is_active else child


def _discover(row: RolloutHost) -> Callable[[], Operation]:
    return lambda: fleet.discover(row.host, trigger=Operation.Trigger.SYSTEM)


def _failed(child: Operation) -> str:
    return child.error.partition("\n")[0] or child.status


# ---- baseline --------------------------------------------------------------------

def baseline(ctx: StepContext) -> Next | Wait:
    """Every host read once as the rollout starts: what the profile would change on it,
    and its critical findings, so a change by hand or a new finding shows later."""
    rollout = _rollout(ctx)
    for row in _rows(rollout, state__in=[State.WAITING, State.BASELINE]):
        if row.state == State.WAITING:
            _start(row, State.BASELINE, _discover(row))
            continue
        child = _child(row)
        if child is None:
            continue
        if child.status != Operation.Status.SUCCEEDED:
            _set(row, State.SKIPPED, f"could not be discovered as the rollout started: "
                                     f"{_failed(child)}")
            continue
        row.host.refresh_from_db()
        _set(row, State.READY, "", baseline=tuning.values_to_change(row.host,
                                                                    rollout.profile_version),
             critical=tuning.critical_findings(row.host))
    waiting = rollout.hosts.filter(state=State.BASELINE).count()
    if waiting:
        return Wait(POLL_SECONDS, message=f"reading {waiting} host(s) before the first wave")
    ctx.log(f"every host read; {rollout.waves} wave(s) to go")
    return Next("wave", "baseline taken", progress=5)


# ---- a wave ------------------------------------------------------------------------

def wave(ctx: StepContext) -> Next | Wait | Done | Fail:
    rollout = _rollout(ctx)
    if rollout.status != Rollout.Status.RUNNING:
        return _ended(rollout)  # it ended in a run whose outcome was not recorded
    rows = _rows(rollout, wave=rollout.wave)
    for row in rows:
        if row.state == State.READY and rollout.paused:
            continue  # paused: what runs ends, nothing new starts
        _advance(ctx, rollout, row)
    verdict = waves.judge_wave({row.host.name: row.state for row in rows},
                               {row.host.name: row.reason for row in rows},
                               canary=rollout.wave == 0)
    name = "the canary" if rollout.wave == 0 else f"wave {rollout.wave}"
    if not verdict.decided:
        if rollout.paused and not any(r.state in waves.IN_FLIGHT for r in rows):
            # Nothing to follow: resume wakes it, so the wait may be long.
            return Wait(PAUSED_POLL_SECONDS, message=f"paused before {name}")
        return Wait(POLL_SECONDS, message=f"{name} under way")
    if not verdict.passed:
        return _stop(ctx, rollout, f"{name}: {verdict.reason}")
    ctx.log(f"{name} passed: " + ", ".join(f"{r.host.name} {r.state}" for r in rows))
    last = rollout.wave + 1 >= rollout.waves
    with transaction.atomic():  # the event exactly when the wave is recorded as passed
        WAVE_DONE.emit(_about(rollout), wave=rollout.wave,
                       hosts={row.host.name: row.state for row in rows})
        if last:
            _end(rollout, Rollout.Status.SUCCEEDED)
        else:
            Rollout.objects.filter(pk=rollout.pk).update(wave=rollout.wave + 1)
    if last:
        return _ended(Rollout.objects.get(pk=rollout.pk))
    return Next("wave", f"{name} passed",
                progress=5 + 90 * (rollout.wave + 1) // rollout.waves)


def _ended(rollout: Rollout) -> Done | Fail:
    if rollout.status == Rollout.Status.SUCCEEDED:
        done = rollout.hosts.filter(state=State.DONE).count()
        return Done({"rollout": rollout.pk, "waves": rollout.waves, "done": done},
                    message=f"rolled out to {done} host(s)")
    rolled = [row.host.name for row in _rows(rollout, state=State.ROLLED_BACK)]
    return Fail(f"{rollout.stop_reason}; rolled back: {', '.join(rolled) or 'nothing'}",
                "rollout_stopped")


def _advance(ctx: StepContext, rollout: Rollout, row: RolloutHost) -> None:
    """One host one step further, as far as its children allow now."""
    if row.state == State.READY:
        _start(row, State.CHECKING, _discover(row), turn_started_at=timezone.now())
    elif row.state in NEXT:
        child = _child(row)
        if child is None:
            return
        if child.status != Operation.Status.SUCCEEDED:
            what = CHILDREN.get(row.state, "discovery")
            _set(row, State.FAILED, f"{what} {child.status}: {_failed(child)}")
            return
        row.host.refresh_from_db()
        NEXT[row.state](ctx, rollout, row)


def _check_and_apply(ctx: StepContext, rollout: Rollout, row: RolloutHost) -> None:
    version = rollout.profile_version
    changed = waves.changed_by_hand(row.baseline or {},
                                    tuning.values_to_change(row.host, version) or {})
    if changed:
        _set(row, State.SKIPPED, "changed by hand during the rollout: " + "; ".join(changed))
        ctx.log(f"{row.host.name} skipped: {row.reason}")
        return
    if rollout.validation == Rollout.Validation.PGBENCH:
        _bench(row, State.BENCH_BEFORE, rollout, "bench_before")
    else:
        _apply(ctx, rollout, row)


def _bench(row: RolloutHost, state: str, rollout: Rollout, field: str) -> None:
    """pgbench on the host's cluster as a child; a host it cannot run on fails."""
    params = {"duration": rollout.pgbench_seconds, "clients": 2, "threads": 1}
    try:
        with transaction.atomic():
            bench = benchmarks.run_benchmark(row.host, None, params,
                                             trigger=Operation.Trigger.SYSTEM)
            _set(row, state, operation=bench.operation, **{field: bench})
    except benchmarks.BenchmarkError as exc:
        _set(row, State.FAILED, f"pgbench could not run: {exc.message}")


def _apply(ctx: StepContext, rollout: Rollout, row: RolloutHost) -> None:
    version = rollout.profile_version
    try:
        with transaction.atomic():
            plan = tuning.make_plan(row.host, version=version)
            if plan.is_empty:
                _set(row, State.DONE, "already as the profile asks; nothing to apply",
                     plan=plan)
                return
            operation = tuning.apply_plan(plan, allow_restart=rollout.allow_restart,
                                          acknowledge=rollout.acknowledged,
                                          trigger=Operation.Trigger.SYSTEM)
            _set(row, State.APPLYING, "", plan=plan, operation=operation)
    except tuning.TuningError as exc:
        _set(row, State.FAILED, f"not applied: {exc.message}")


def _applied(ctx: StepContext, rollout: Rollout, row: RolloutHost) -> None:
    if rollout.validation == Rollout.Validation.NONE:
        _set(row, State.DONE, "applied (no validation asked for)")
        return
    # Read again: the findings are judged on what the host is after the apply.
    _start(row, State.VERIFYING, _discover(row))


def _validate(ctx: StepContext, rollout: Rollout, row: RolloutHost) -> None:
    """The lighter health check: every running cluster answers a query, every applied
    value reads back as planned, no new critical finding and no alert opened since
    the host's turn began."""
    problems = _on_host(row)
    problems += [f"new critical finding {found}"
                 for found in waves.new_findings(row.critical or [],
                                                 tuning.critical_findings(row.host))]
    opened = Alert.objects.filter(host=row.host, resolved_at=None,
                                  created_at__gte=row.turn_started_at)
    problems += [f"alert {alert.kind} opened: {alert.message}" for alert in opened]
    if problems:
        _set(row, State.FAILED, "validation failed: " + "; ".join(problems))
        ctx.log(f"{row.host.name}: {row.reason}")
    elif rollout.validation == Rollout.Validation.PGBENCH:
        _bench(row, State.BENCH_AFTER, rollout, "bench_after")
    else:
        _set(row, State.DONE, "applied and validated")


def _compared(ctx: StepContext, rollout: Rollout, row: RolloutHost) -> None:
    before, after = row.bench_before, row.bench_after
    worse = waves.tps_drop(before.tps, after.tps, rollout.max_tps_drop_percent)
    if worse:
        _set(row, State.FAILED, f"validation failed: {worse}")
        ctx.log(f"{row.host.name}: {row.reason}")
    else:
        _set(row, State.DONE, f"applied and validated; pgbench TPS {before.tps:.1f} -> "
                              f"{after.tps:.1f}")


def _on_host(row: RolloutHost) -> list[str]:
    run = ssh.session(row.host.ssh_target(),
                      connect_timeout=settings.POZOL["SSH_CONNECT_TIMEOUT"])
    problems = []
    try:
        for cluster in row.host.clusters.filter(running=True):
            answer = run(cluster.target().psql("select 1"), check=False)
            if answer.exit_code != 0 or answer.stdout.strip() != "1":
                problems.append(f"the cluster on port {cluster.port} did not answer a query: "
                                f"{answer.stderr.strip()[-300:]}")
        for change in row.plan.changes.filter(status=PlanChange.Status.APPLIED):
            after = LAYERS[change.layer].read(run, change)
            if not reads_as(change, after):
                problems.append(f"{change.layer} {change.target} {change.key} reads "
                                f"{after['value']!r}, planned {change.desired!r}")
    except (RemoteError, InvalidValue) as exc:
        problems.append(str(exc).partition("\n")[0])
    return problems


# What a host does when its child succeeded, by the state it waited in; and what the
# child was, to say what failed.
NEXT = {State.CHECKING: _check_and_apply, State.BENCH_BEFORE: _apply,
        State.APPLYING: _applied, State.VERIFYING: _validate,
        State.BENCH_AFTER: _compared}
CHILDREN = {State.BENCH_BEFORE: "pgbench before the apply", State.APPLYING: "apply",
            State.BENCH_AFTER: "pgbench after the apply"}


# ---- stopping ------------------------------------------------------------------------

def _stop(ctx: StepContext, rollout: Rollout, reason: str) -> Next:
    Rollout.objects.filter(pk=rollout.pk).update(stop_reason=reason[:4000])
    ctx.log(f"stopping: {reason}", "warning")
    return Next("roll_back", "stopping; rolling back")


def roll_back(ctx: StepContext) -> Wait | Done | Fail:
    rollout = _rollout(ctx)
    if rollout.status != Rollout.Status.RUNNING:
        return _ended(rollout)
    layout = _layout(rollout)
    chosen = waves.to_roll_back(layout, rollout.wave, earlier_too=rollout.rollback_earlier_waves)
    rows = {row.host_id: row for row in _rows(rollout, host_id__in=chosen)}
    for row in (rows[host_id] for host_id in chosen):
        _roll_back_one(row, rollout)
    running = rollout.hosts.filter(state=State.ROLLING_BACK).count()
    if running:
        return Wait(POLL_SECONDS, message=f"rolling back {running} host(s)")
    rolled = [row.host.name for row in _rows(rollout, state=State.ROLLED_BACK)]
    with transaction.atomic():
        _end(rollout, Rollout.Status.STOPPED)
        STOPPED.emit(_about(rollout), wave=rollout.wave, reason=rollout.stop_reason,
                     rolled_back=rolled)
    return _ended(Rollout.objects.get(pk=rollout.pk))


def _roll_back_one(row: RolloutHost, rollout: Rollout) -> None:
    if row.state == State.ROLLING_BACK:
        child = _child(row)
        if child is None:
            return
        if child.status == Operation.Status.SUCCEEDED:
            _set(row, State.ROLLED_BACK, f"{row.reason}; rolled back".lstrip("; "))
        else:
            _set(row, State.ROLLBACK_FAILED, f"{row.reason}; rollback {child.status}: "
                                             f"{_failed(child)}".lstrip("; "))
        return
    if row.state not in (State.DONE, State.FAILED) or row.rollback_plan_id:
        return
    plan = Plan.objects.filter(pk=row.plan_id).first()
    if plan is None or not plan.can_roll_back:
        return  # nothing was written on this host
    with transaction.atomic():
        back, operation = tuning.rollback(plan, allow_restart=rollout.allow_restart,
                                          trigger=Operation.Trigger.SYSTEM)
        _set(row, State.ROLLING_BACK, None, rollback_plan=back, operation=operation)


def _layout(rollout: Rollout) -> list[list[int]]:
    layout: list[list[int]] = [[] for _ in range(rollout.waves)]
    for host_id, number in rollout.hosts.order_by("position").values_list("host_id", "wave"):
        layout[number].append(host_id)
    return layout


def _end(rollout: Rollout, status: str) -> None:
    Rollout.objects.filter(pk=rollout.pk).update(status=status, finished_at=timezone.now())


def _about(rollout: Rollout) -> dict:
    return {"type": "rollout", "id": rollout.pk, "name": str(rollout.profile_version)}


KIND = register(Kind(
    name="rollout.run",
    steps={"baseline": baseline, "wave": wave, "roll_back": roll_back},
    first_step="baseline",
    mutating=False,  # its children are the mutating work, each serialised on its host
    deadline=timedelta(days=7),  # a pause may last; each child has its own deadline
))
