"""experiments.run: one Operation that measures every value and puts the host back.

begin (room check, read every before-value, write the script) -> confine (a custom
script's own role and database: commands.confine) -> hold (settings held for the whole
experiment) -> per run: set (the value) -> [restart] -> prepare (re-initialise,
script setup) -> measure (WAL/checkpoint snapshot, pgbench and the checkpointer detached)
-> poll -> collect (figures, compression ratio, drain) -> ... -> restore -> [restart] ->
finish.

A cancel is a request (engine.cancel, winds_down_on_cancel): the next step that runs
stops the run's remote jobs and goes to `restore`, as a failure does (a restart under
way finishes first), and `finish` ends the operation as cancelled.

Every remote job has a unit name derived from the operation and the run's position, and
the position advances only when a step ends, so a step re-run by another worker (after a
restart of the worker) finds its job instead of starting it twice. Any failure before
`restore` is recorded and leads to `restore`: the host is put back also after a failure.
"""

from __future__ import annotations

import functools
import secrets
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.experiments import host_settings
from apps.experiments.core import commands
from apps.experiments.core.runs import room_needed, wal_per_transaction
from apps.experiments.models import Experiment, Run
from apps.experiments.results import results
from apps.fleet import reserves
from apps.ops import remote_jobs
from apps.ops.engine import CANCELLED, Done, Fail, Kind, Next, StepContext, Wait, register
from apps.remote import detached
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import InvalidValue, pool_of
from apps.remote.errors import RemoteError
from apps.remote.facts import pgbench as facts

OVERRUN_GRACE = 60  # seconds past -T before a run counts as stuck
TAIL = 1500


def guarded(step):
    """A failure (refusal, remote error, bad output) goes to `restore`, remembered. Any
    other exception is retried by the engine, but its last attempt goes to `restore`
    too: the engine would otherwise fail the operation with the host still changed."""
    @functools.wraps(step)
    def wrapper(ctx: StepContext):
        if ctx.cancel_requested and ctx.operation.step != "restart":
            # A restart under way finishes first: restoring needs PostgreSQL up.
            ctx.log(f"{ctx.cancel_requested}: stopping the runs; restoring the host",
                    "warning")
            _stop_units(ctx)
            return Next("restore", "cancelled; restoring the host")
        try:
            outcome = step(ctx)
        except (RemoteError, InvalidValue, ValueError) as exc:
            outcome = Fail(str(exc), getattr(exc, "code", "failed"))
        except Exception as exc:
            if ctx.operation.attempts < settings.POZOL["OPERATION_MAX_ATTEMPTS"]:
                raise
            outcome = Fail(f"step {ctx.operation.step!r} kept raising {exc!r}", "step_raised")
        if isinstance(outcome, Fail):
            ctx.state["error"] = {"text": outcome.error, "code": outcome.code}
            ctx.log(f"failed at {ctx.operation.step}: {outcome.error}; restoring the host",
                    "error")
            _stop_units(ctx)
            return Next("restore", "failed; restoring the host")
        return outcome
    return wrapper


@guarded
def begin(ctx: StepContext) -> Next | Fail:
    exp = _experiment(ctx)
    if exp.original:  # read already (this step re-run): never read the changed values
        return Next("confine")
    run = ctx.runner()
    work = exp.workload
    if exp.data_dataset:
        need = room_needed(work["scale"], work["duration"], len(ctx.state["order"]),
                                work["reinit"])
        shortage = reserves.refusal_on_host(
            run, ctx.host, pool_of(exp.data_dataset), need,
            f"a run at scale {work['scale']} for {work['duration']} s")
        if shortage:
            return Fail(f"refused: {shortage.message} (or shorten the runs)", "no_room")
    cluster = _target(ctx)
    original = {"varied": host_settings.read(run, cluster, exp.layer, exp.key, exp.target),
                "held": [host_settings.read(run, cluster, h["layer"], h["key"], h.get("target", ""))
                         for h in exp.held]}
    Experiment.objects.filter(pk=exp.pk).update(original=original)
    ctx.log(f"before: {exp.key} = {original['varied']['value']!r}"
            + "".join(f", {h['key']} = {o['value']!r}" for h, o in zip(exp.held, original["held"],
                                                                       strict=True)))
    if exp.script_version_id:
        result = run(commands.write_script(), stdin=exp.script_version.text.encode())
        ctx.state["tmp_dir"] = result.stdout.strip()
    return Next("confine", progress=1)


@guarded
def confine(ctx: StepContext) -> Next:
    """A custom script's role and database (commands.confine), made again when this step
    is run again; a built-in script is PoZoL's own text and runs as the owner."""
    exp = _experiment(ctx)
    if not exp.script_version_id or exp.script_version.script.builtin:
        return Next("hold")
    confined = commands.Confined.of(ctx.operation.pk, ctx.state["tmp_dir"])
    ctx.state["confined"] = {"role": confined.role, "passfile": confined.passfile}
    ctx.runner()(commands.confine(_target(ctx), confined, secrets.token_hex(24)), timeout=120)
    ctx.log(f"the script runs as role {confined.role} (no superuser, no membership), in "
            f"its own database {confined.role}")
    return Next("hold")


@guarded
def hold(ctx: StepContext) -> Next:
    exp = _experiment(ctx)
    run, cluster = ctx.runner(), _target(ctx)
    restart = False
    for h in exp.held:
        host_settings.write(run, cluster, h["layer"], h["key"], h.get("target", ""), h["value"])
        restart |= host_settings.pending_restart(run, cluster, h["layer"], h["key"])
        ctx.log(f"holding {h['key']} = {h['value']!r} for the whole experiment")
    return _restart_then(ctx, "set") if restart else Next("set")


@guarded
def set_value(ctx: StepContext) -> Next:
    exp = _experiment(ctx)
    index = ctx.state["index"]
    value, repetition = ctx.state["order"][index]
    Run.objects.get_or_create(experiment=exp, position=index,
                              defaults={"value": value, "repetition": repetition})
    run, cluster = ctx.runner(), _target(ctx)
    host_settings.write(run, cluster, exp.layer, exp.key, exp.target, value)
    ctx.log(f"run {index + 1}/{len(ctx.state['order'])}: {exp.key} = {value!r}")
    if host_settings.pending_restart(run, cluster, exp.layer, exp.key):
        return _restart_then(ctx, "prepare")
    return Next("prepare", progress=_progress(ctx))


def _restart_then(ctx: StepContext, after: str) -> Next:
    ctx.state["after_restart"] = after
    return Next("restart", "restarting PostgreSQL")


@guarded
def restart(ctx: StepContext) -> Next | Wait | Fail:
    number = ctx.state.get("restarts", 0)
    status = remote_jobs.advance(ctx, f"restart{number}", _target(ctx).control("restart"))
    if status.state == "running":
        return Wait(1, message="restarting PostgreSQL")
    if status.state != "succeeded":
        return Fail(f"pg_ctl restart ended {status.state} (exit {status.exit_code})",
                    "restart_failed")
    ctx.state["restarts"] = number + 1
    return Next(ctx.state.pop("after_restart"), "PostgreSQL restarted")


@guarded
def prepare(ctx: StepContext) -> Next | Wait | Fail:
    exp, index = _experiment(ctx), ctx.state["index"]
    work = exp.workload
    confined = _confined(ctx)
    if work["reinit"] or (confined and not ctx.state.get("initialised")):
        command = commands.initialise(_target(ctx, _database(ctx, exp)), work["scale"], confined)
        status = remote_jobs.advance(ctx, f"init{index}", command)
        if status.state == "running":
            return Wait(1, message=f"run {index + 1}: re-initialising the pgbench tables")
        if status.state != "succeeded":
            return Fail(f"pgbench -i ended {status.state} (exit {status.exit_code}):\n"
                        + _tail(ctx, f"init{index}"), "pgbench_init_failed")
        ctx.state["initialised"] = True
    if exp.script_version_id and exp.script_version.setup.strip():
        copy_file = f"{exp.data_dir}/{commands.COPY_FILE}"
        ctx.runner()(commands.setup(_target(ctx, _database(ctx, exp)),
                                    exp.script_version.setup, copy_file, confined))
    return Next("measure")


@guarded
def measure(ctx: StepContext) -> Next:
    exp, index = _experiment(ctx), ctx.state["index"]
    work = exp.workload
    row = Run.objects.get(experiment=exp, position=index)
    if row.wal_before is None:
        wal, checkpoints = _snapshot(ctx, exp)
        Run.objects.filter(pk=row.pk).update(wal_before=wal, checkpoints_before=checkpoints,
                                             started_at=timezone.now())
    target = _target(ctx, _database(ctx, exp))
    script_file = f"{ctx.state['tmp_dir']}/script.sql" if ctx.state.get("tmp_dir") else None
    remote_jobs.advance(ctx, f"run{index}", commands.pgbench(target, work, script_file,
                                                              _confined(ctx)))
    if work["checkpoint_every"]:
        until = f"{ctx.host.work_dir}/{remote_jobs.unit_for(ctx, f'run{index}')}.status"
        remote_jobs.advance(ctx, f"ckpt{index}", commands.checkpointer(
            _target(ctx), work["checkpoint_every"], until, work["duration"] + 30))
    return Next("poll", f"run {index + 1}: pgbench for {work['duration']} s")


@guarded
def poll(ctx: StepContext) -> Next | Wait | Fail:
    exp, index = _experiment(ctx), ctx.state["index"]
    unit = remote_jobs.unit_for(ctx, f"run{index}")
    status = detached.poll(ctx.runner(), unit, ctx.host.work_dir)
    if status.state != "running":
        return Next("collect")
    duration = exp.workload["duration"]
    elapsed = (timezone.now() - status.started_at).total_seconds() if status.started_at else 0
    if elapsed - duration > max(OVERRUN_GRACE, duration / 2):
        return Fail(f"pgbench was still running {elapsed - duration:.0f} s after its "
                    f"{duration} s (storage not answering?)", "pgbench_stuck")
    ctx.progress(_progress(ctx, min(1.0, elapsed / duration)),
                 f"run {index + 1}/{len(ctx.state['order'])}: {elapsed:.0f}/{duration} s")
    return Wait(1, message=ctx.operation.message)


@guarded
def collect(ctx: StepContext) -> Next | Fail:
    exp, index = _experiment(ctx), ctx.state["index"]
    name = f"run{index}"
    status = detached.poll(ctx.runner(), remote_jobs.unit_for(ctx, name), ctx.host.work_dir)
    stderr = _tail(ctx, name)
    if status.state != "succeeded" or facts.was_aborted(stderr):
        return Fail(f"pgbench ended {status.state} (exit {status.exit_code}):\n{stderr}",
                    "pgbench_failed")
    stdout, _ = remote_jobs.output(ctx, name)
    summary = facts.parse_summary(stdout)
    if summary.tps is None:
        return Fail(f"pgbench printed no tps; stdout ends:\n{stdout[-TAIL:]}", "pgbench_no_result")
    row = Run.objects.get(experiment=exp, position=index)
    wal, checkpoints = _snapshot(ctx, exp)
    run = ctx.runner()
    ratio = (commands.parse_ratio(run(commands.compressratio(exp.data_dataset)).stdout)
             if exp.data_dataset else None)
    dirty, drain = commands.parse_drain(run(commands.drain(), timeout=600).stdout)
    per_tx = wal_per_transaction(row.wal_before, wal, summary.transactions)
    Run.objects.filter(pk=row.pk).update(
        tps=summary.tps, latency_ms=summary.latency_avg_ms, transactions=summary.transactions,
        wal_after=wal, wal_per_tx=per_tx, checkpoints=checkpoints - row.checkpoints_before,
        compressratio=ratio, drain_seconds=drain, dirty_bytes_at_end=dirty,
        ended_at=timezone.now())
    ctx.log(f"run {index + 1} ({exp.key} = {row.value!r}): {summary.tps:.0f} tps, "
            f"WAL/tx {per_tx and round(per_tx)} B, {checkpoints - row.checkpoints_before} "
            f"checkpoint(s), compressratio {ratio}, sync {drain} s")
    ctx.state["index"] = index + 1
    more = ctx.state["index"] < len(ctx.state["order"])
    return Next("set" if more else "restore", progress=_progress(ctx))


def restore(ctx: StepContext) -> Next:
    """Every before-value back, the varied one first (wal_level=minimal must go before
    max_wal_senders returns); each tried even when another fails."""
    exp = _experiment(ctx)
    if ctx.state.get("restored"):
        return Next("finish")
    run, cluster = ctx.runner(), _target(ctx)
    original = exp.original or {}
    items = []
    if original.get("varied"):
        items.append((exp.layer, exp.key, exp.target, original["varied"]))
    for h, before in reversed(list(zip(exp.held, original.get("held") or [], strict=False))):
        items.append((h["layer"], h["key"], h.get("target", ""), before))
    errors, restart = [], False
    for layer, key, target, before in items:
        try:
            host_settings.restore(run, cluster, layer, key, target, before)
            restart |= host_settings.pending_restart(run, cluster, layer, key)
            ctx.log(f"restored {key} to {before['value']!r}")
        except (RemoteError, InvalidValue) as exc:
            errors.append(f"{key}: {exc}")
    for command in _cleanup(ctx, exp):
        try:
            run(command)
        except RemoteError as exc:
            ctx.log(f"cleanup: {exc}", "warning")
    ctx.state["restored"] = True
    ctx.state["restore_errors"] = errors
    Experiment.objects.filter(pk=exp.pk).update(restored=not errors and bool(items))
    return _restart_then(ctx, "finish") if restart else Next("finish", progress=99)


def _cleanup(ctx: StepContext, exp: Experiment) -> list:
    out = []
    if _confined(ctx):
        out.append(commands.release(_target(ctx), _confined(ctx)))
    if ctx.state.get("tmp_dir"):
        out.append(commands.remove_dir(ctx.state["tmp_dir"]))
    if exp.script_version_id and exp.script_version.setup.strip():
        out.append(commands.remove_copy_file(exp.data_dir))
    return out


def finish(ctx: StepContext) -> Done | Fail:
    exp = _experiment(ctx)
    errors = ctx.state.get("restore_errors") or []
    if errors:
        restored = "; NOT restored: " + "; ".join(errors)
    elif exp.original:
        restored = "; the host was restored"
    else:
        restored = "; nothing on the host had been changed"
    if ctx.state.get("error"):
        error = ctx.state["error"]
        return Fail(error["text"] + restored, error["code"])
    if errors:  # cancelled or not, a host left changed is a failure to look at
        return Fail((ctx.cancel_requested or "the runs ended") + restored, "restore_failed")
    if ctx.cancel_requested:
        return Fail(ctx.cancel_requested + restored, CANCELLED)
    result = results(exp)
    return Done({"experiment": exp.pk, "verdict": result["verdict"]["text"]},
                message=result["verdict"]["text"][:300])


# ---- helpers ------------------------------------------------------------------------

def _experiment(ctx: StepContext) -> Experiment:
    return Experiment.objects.select_related("script_version").get(pk=ctx.state["experiment"])


def _target(ctx: StepContext, database: str = "postgres") -> ClusterTarget:
    # Fixed when the experiment was asked for: a rediscovery must not move it.
    return ClusterTarget.of(**{**ctx.state["target"], "database": database})


def _confined(ctx: StepContext) -> commands.Confined | None:
    values = ctx.state.get("confined")
    return commands.Confined(**values) if values else None


def _database(ctx: StepContext, exp: Experiment) -> str:
    """Where the runs happen: a custom script's own database, else the workload's."""
    confined = _confined(ctx)
    return confined.role if confined else exp.workload["database"]


def _snapshot(ctx: StepContext, exp: Experiment) -> tuple[int, int]:
    command = commands.snapshot(_target(ctx), exp.server_version_num)
    return commands.parse_snapshot(ctx.runner()(command, timeout=60).stdout)


def _progress(ctx: StepContext, within: float = 0.0) -> int:
    total = len(ctx.state["order"]) or 1
    return min(98, 2 + int(96 * (ctx.state["index"] + within) / total))


def _tail(ctx: StepContext, name: str) -> str:
    text, _ = remote_jobs.output(ctx, name, 0, "stderr")
    return text[-TAIL:].strip()


def _stop_units(ctx: StepContext) -> None:
    index = ctx.state.get("index", 0)
    for name in (f"run{index}", f"ckpt{index}", f"init{index}"):
        try:
            detached.stop(ctx.runner(), remote_jobs.unit_for(ctx, name), ctx.host.work_dir)
        except RemoteError:
            pass


KIND = register(Kind(
    name="experiments.run",
    steps={"begin": begin, "confine": confine, "hold": hold, "set": set_value, "restart": restart,
           "prepare": prepare, "measure": measure, "poll": poll, "collect": collect,
           "restore": restore, "finish": finish},
    first_step="begin",
    mutating=True,
    deadline=timedelta(hours=12),
    winds_down_on_cancel=True,
))
