"""Operation kinds that exist only for tests of the engine itself."""

from apps.ops.engine import CANCELLED, Done, Fail, Kind, Next, Wait, register


def _count(ctx, name: str) -> int:
    ctx.state[name] = ctx.state.get(name, 0) + 1
    return ctx.state[name]


def _first(ctx):
    _count(ctx, "first_runs")
    ctx.log("first step ran")
    return Next("second", "moving on", progress=40)


def _second(ctx):
    if _count(ctx, "second_runs") == 1:
        return Wait(30, message="waiting once")
    return Done({"first_runs": ctx.state["first_runs"], "second_runs": ctx.state["second_runs"]})


STORY = register(Kind("test.story", {"first": _first, "second": _second}, "first",
                      mutating=True))


def _work_carefully(ctx):
    """Long work that must be undone when cancelled, as an experiment's is."""
    if ctx.cancel_requested:
        return Next("put_back", "putting things back")
    return Wait(30, message="working")


def _put_back(ctx):
    ctx.log("put back")
    return Fail(f"{ctx.cancel_requested}; put back", CANCELLED)


CAREFUL = register(Kind("test.careful", {"work": _work_carefully, "put_back": _put_back},
                        "work", mutating=True, winds_down_on_cancel=True))


def _explode(ctx):
    raise RuntimeError("boom")


EXPLODES = register(Kind("test.explodes", {"only": _explode}, "only", mutating=False))
REFUSES = register(Kind("test.refuses", {"only": lambda ctx: Fail("no way", "nope")}, "only",
                        mutating=False))


def _remote_sleep(ctx):
    """A step that takes a few seconds on a real host (state "seconds", 4 unless
    given): the window to kill a worker in, or a step that outlives its lease.

    Each run leaves a line on the host, so a test can count the runs there: state
    saved by a killed run is lost with it, by design.
    """
    from apps.remote.commands import script

    marks = f"{ctx.host.work_dir}/remote-sleep-{ctx.operation.pk}"
    seconds = int(ctx.state.get("seconds", 4))
    ctx.runner()(script("echo ran >> {marks}; sleep {seconds}", marks=marks, seconds=seconds),
                 timeout=seconds + 30)
    return Done({"marks": marks})


REMOTE_SLEEP = register(Kind("test.remote_sleep", {"sleep": _remote_sleep}, "sleep",
                             mutating=True))


def _detached_sleep(ctx):
    """Long remote work the engine's way: start detached once, then poll."""
    from apps.ops import remote_jobs
    from apps.remote.commands import script

    marks = f"{ctx.host.work_dir}/detached-sleep-{ctx.operation.pk}"
    # Long enough that a loaded machine still re-delivers the step before it ends.
    command = script("echo ran >> {marks}; sleep 6; echo slept", marks=marks)
    status = remote_jobs.advance(ctx, "sleep", command)
    if status.state == "running":
        return Wait(0.5, message="sleeping on the host")
    if status.state != "succeeded":
        return Fail(f"the remote sleep ended {status.state} ({status.exit_code})")
    text, _ = remote_jobs.output(ctx, "sleep")
    return Done({"marks": marks, "output": text.strip()})


DETACHED_SLEEP = register(Kind("test.detached_sleep", {"run": _detached_sleep}, "run",
                               mutating=True))


def _outlive_lease(ctx):
    """A step that runs longer than its lease, in this process: it says how much of
    its lease was left when it ended (negative: the lease ran out under it)."""
    import time

    from django.utils import timezone

    from apps.ops.models import Operation

    time.sleep(float(ctx.state["seconds"]))
    expires = Operation.objects.get(pk=ctx.operation.pk).lease_expires_at
    ctx.state["lease_left"] = (expires - timezone.now()).total_seconds() if expires else None
    return Done({"lease_left": ctx.state["lease_left"]})


OUTLIVES_LEASE = register(Kind("test.outlives_lease", {"only": _outlive_lease}, "only",
                               mutating=False))
