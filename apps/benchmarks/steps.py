"""benchmarks.run: pgbench on a host as an Operation, polled second by second.

prepare (pgbench -i, detached, only when asked) -> wal_before -> run (pgbench
and a meminfo sampler, both detached) -> poll (every second: new progress
lines and samples, the series so far) -> collect (summary, WAL after, WAL per
transaction). Every remote piece of work has a unit name derived from the
operation, so a step re-run by another worker never starts anything twice.

It is mutating: a benchmark loads the host, and figures taken while other
work changes it would mean nothing, so the engine serialises it with them.
"""

from __future__ import annotations

import bisect
from datetime import timedelta

from django.utils import timezone

from apps.benchmarks.core import commands
from apps.benchmarks.models import Benchmark
from apps.ops import remote_jobs
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, Wait, register
from apps.remote import detached
from apps.remote.cluster import ClusterTarget
from apps.remote.facts import pgbench as facts

PGBENCH, SAMPLER, INIT = "pgbench", "meminfo", "init"
FAILURE_TAIL = 1500  # characters of stderr kept in a failure
OVERRUN_GRACE = 60  # seconds past -T before a run counts as stuck


def prepare(ctx: StepContext) -> Next | Wait | Fail:
    bench = _benchmark(ctx)
    params = bench.parameters
    if not params.get("init"):
        return Next("wal_before", "reusing the existing pgbench tables", progress=2)
    command = commands.initialise(_target(ctx, bench), params["scale"])
    status = remote_jobs.advance(ctx, INIT, command)
    if status.state == "running":
        return Wait(1, message=f"initialising pgbench tables at scale {params['scale']}")
    if status.state != "succeeded":
        return Fail(f"pgbench -i ended {status.state} (exit {status.exit_code}):\n"
                    + _stderr_tail(ctx, INIT), code="pgbench_init_failed")
    return Next("wal_before", f"pgbench tables initialised at scale {params['scale']}",
                progress=2)


def wal_before(ctx: StepContext) -> Next:
    bench = _benchmark(ctx)
    value, source = _read_wal(ctx, bench)
    Benchmark.objects.filter(pk=bench.pk).update(wal_bytes_before=value, wal_source=source)
    return Next("run", f"WAL before: {value} bytes ({source})", progress=3)


def run(ctx: StepContext) -> Next:
    bench = _benchmark(ctx)
    params = bench.parameters
    remote_jobs.advance(ctx, PGBENCH, commands.run(
        _target(ctx, bench), clients=params["clients"], threads=params["threads"],
        duration=params["duration"], mode=params["mode"], protocol=params["protocol"]))
    remote_jobs.advance(ctx, SAMPLER, commands.meminfo_sampler(
        _status_file(ctx, PGBENCH), params["duration"]))
    return Next("poll", f"pgbench running for {params['duration']} s", progress=5)


def poll(ctx: StepContext) -> Next | Wait:
    status = detached.poll(ctx.runner(), remote_jobs.unit_for(ctx, PGBENCH), ctx.host.work_dir)
    _read_new_output(ctx)
    bench = _benchmark(ctx)
    _store_series(ctx, bench)
    points = ctx.state.get("points") or []
    if status.state == "running":
        if late := _overrun(status, bench.parameters["duration"]):
            return _give_up(ctx, late, bench.parameters["duration"])
        elapsed = points[-1][0] if points else 0
        tps = f"{points[-1][1]:.0f} tps" if points else "starting"
        ctx.progress(min(99, int(100 * elapsed / bench.parameters["duration"])), tps)
        return Wait(1, message=tps)
    return Next("collect", f"pgbench ended ({status.state})", progress=99)


def _overrun(status, duration: int) -> float | None:
    """Seconds past -T once that is clearly too long. pgbench ends a run between
    transactions, so clients stuck inside one (storage that stopped answering)
    keep it running for ever; polling must not."""
    if status.started_at is None:
        return None
    late = (timezone.now() - status.started_at).total_seconds() - duration
    return late if late > max(OVERRUN_GRACE, duration / 2) else None


def _give_up(ctx: StepContext, late: float, duration: int) -> Fail:
    for unit in (PGBENCH, SAMPLER):
        detached.stop(ctx.runner(), remote_jobs.unit_for(ctx, unit), ctx.host.work_dir)
    return Fail(f"pgbench was still running {late:.0f} s after its {duration} s: its clients "
                "are stuck inside transactions (storage not answering fsync?). It was "
                f"stopped. Its last output:\n{_stderr_tail(ctx, PGBENCH)}", code="pgbench_stuck")


def collect(ctx: StepContext) -> Done | Fail:
    status = detached.poll(ctx.runner(), remote_jobs.unit_for(ctx, PGBENCH), ctx.host.work_dir)
    _read_new_output(ctx)  # lines written after the last poll
    bench = _benchmark(ctx)
    _store_series(ctx, bench)
    stderr_tail = _stderr_tail(ctx, PGBENCH)
    if status.state != "succeeded" or facts.was_aborted(stderr_tail):
        return Fail(f"pgbench ended {status.state} (exit {status.exit_code}):\n{stderr_tail}",
                    code="pgbench_failed")
    stdout, _ = remote_jobs.output(ctx, PGBENCH)
    summary = facts.parse_summary(stdout)
    if summary.tps is None:
        return Fail(f"pgbench printed no tps; stdout ends:\n{stdout[-FAILURE_TAIL:]}",
                    code="pgbench_no_result")
    after, _ = _read_wal(ctx, bench)
    per_tx = facts.wal_per_transaction(bench.wal_bytes_before, after, summary.transactions)
    Benchmark.objects.filter(pk=bench.pk).update(
        summary=summary.to_dict(), wal_bytes_after=after, wal_bytes_per_transaction=per_tx)
    ctx.log(f"tps {summary.tps}, latency {summary.latency_avg_ms} ms, "
            f"{summary.transactions} transactions, WAL per transaction {per_tx} bytes")
    return Done({"benchmark": bench.pk, "tps": summary.tps,
                 "latency_avg_ms": summary.latency_avg_ms,
                 "wal_bytes_per_transaction": per_tx},
                message=f"{summary.tps:.0f} tps, {summary.latency_avg_ms} ms")


# ---- helpers -----------------------------------------------------------------------

def _benchmark(ctx: StepContext) -> Benchmark:
    return Benchmark.objects.get(pk=ctx.state["benchmark"])


def _target(ctx: StepContext, bench: Benchmark) -> ClusterTarget:
    # Where to connect was fixed when the benchmark was asked for (services.run_benchmark):
    # a rediscovery meanwhile must not move it to another cluster.
    return ClusterTarget.of(**ctx.state["target"], database=bench.database)


def _status_file(ctx: StepContext, name: str) -> str:
    # The status file apps.remote.detached writes when the unit's command ends.
    return f"{ctx.host.work_dir}/{remote_jobs.unit_for(ctx, name)}.status"


def _read_wal(ctx: StepContext, bench: Benchmark) -> tuple[int, str]:
    command = commands.wal_bytes(_target(ctx, bench), bench.server_version_num)
    value = facts.parse_wal_bytes(ctx.runner()(command, timeout=60).stdout)
    if facts.wal_query(bench.server_version_num) == facts.WAL_LSN_QUERY:
        ctx.log("PostgreSQL 13 has no pg_stat_wal: WAL is measured as the difference of "
                "pg_current_wal_lsn(), which counts every session's WAL")
        return value, "wal_lsn"
    return value, "pg_stat_wal"


def _read_new_output(ctx: StepContext) -> None:
    """Append the complete progress lines and meminfo samples written since the last read.

    Offsets advance by complete lines only, so a line cut by a read is read
    whole next time; the state (offsets with what they covered) is saved as one.
    """
    state = ctx.state
    text, _ = remote_jobs.output(ctx, PGBENCH, state.get("stderr_offset", 0), "stderr")
    text = facts.complete_part(text)
    state["stderr_offset"] = state.get("stderr_offset", 0) + len(text.encode())
    if state.get("start_epoch") is None:
        state["start_epoch"] = facts.parse_start_epoch(text)
    points = state.setdefault("points", [])
    last = points[-1][0] if points else -1.0
    points.extend([p.t, p.tps, p.latency_ms] for p in facts.parse_progress(text) if p.t > last)

    text, _ = remote_jobs.output(ctx, SAMPLER, state.get("samples_offset", 0))
    text = facts.complete_part(text)
    state["samples_offset"] = state.get("samples_offset", 0) + len(text.encode())
    state.setdefault("samples", []).extend(list(s) for s in facts.parse_meminfo_samples(text))


def _store_series(ctx: StepContext, bench: Benchmark) -> None:
    series = build_series(ctx.state.get("points") or [], ctx.state.get("samples") or [],
                          ctx.state.get("start_epoch"))
    Benchmark.objects.filter(pk=bench.pk).update(series=series)


def build_series(points: list, samples: list, start_epoch: float | None) -> dict:
    """Per progress second: tps, latency and the meminfo sample nearest that moment.

    Progress times count from pgbench's start; samples carry the host's clock,
    so the start marker places them (without it, the first sample stands in).
    """
    start = start_epoch if start_epoch is not None else (samples[0][0] if samples else 0.0)
    series: dict[str, list] = {"t": [], "tps": [], "latency_ms": [], "dirty_bytes": [],
                               "writeback_bytes": []}
    for t, tps, latency in points:
        sample = _nearest(samples, start + t)
        series["t"].append(t)
        series["tps"].append(tps)
        series["latency_ms"].append(latency)
        series["dirty_bytes"].append(sample[1] if sample else None)
        series["writeback_bytes"].append(sample[2] if sample else None)
    return series


def _nearest(samples: list, moment: float, within: float = 1.0) -> list | None:
    """The sample closest to `moment` (samples are in time order), if within `within` s."""
    index = bisect.bisect_left(samples, moment, key=lambda s: s[0])
    near = [samples[i] for i in (index - 1, index) if 0 <= i < len(samples)]
    best = min(near, key=lambda s: abs(s[0] - moment), default=None)
    return best if best is not None and abs(best[0] - moment) <= within else None


def _stderr_tail(ctx: StepContext, name: str) -> str:
    offset = max(0, ctx.state.get("stderr_offset", 0) - 64 * 1024) if name == PGBENCH else 0
    text, _ = remote_jobs.output(ctx, name, offset, "stderr")
    return text[-FAILURE_TAIL:].strip()


KIND = register(Kind(
    name="benchmarks.run",
    steps={"prepare": prepare, "wal_before": wal_before, "run": run, "poll": poll,
           "collect": collect},
    first_step="prepare",
    mutating=True,
    # pgbench -i at a large scale can take hours; the run itself at most one.
    deadline=timedelta(hours=8),
))
