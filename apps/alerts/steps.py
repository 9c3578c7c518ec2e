"""The scrub operation: start `zpool scrub <pool>` (one already running is
followed, not refused), then poll `zpool status <pool>` until it ends, with its
progress on the operation. Not mutating: ZFS scrubs beside the pool's work,
and it must not wait behind a one-hour benchmark."""

from __future__ import annotations

from datetime import timedelta

from apps.alerts.core import scrub
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, Wait, register
from apps.remote.commands import cmd, pool_name

POLL_SECONDS = 10


def start(ctx: StepContext) -> Next | Fail:
    pool = pool_name(ctx.state["pool"])
    result = ctx.runner()(cmd("zpool", "scrub", pool), timeout=60, check=False)
    if not result.ok and not scrub.already_running(result.stderr):
        return Fail(f"zpool scrub {pool} failed: {result.stderr.strip()[-500:]}",
                    code="scrub_failed")
    ctx.log("a scrub was already running: following it" if not result.ok else "scrub started")
    return Next("follow", message=f"scrubbing {pool}")


def follow(ctx: StepContext) -> Wait | Done | Fail:
    pool = pool_name(ctx.state["pool"])
    result = ctx.runner()(cmd("zpool", "status", pool), timeout=60)
    now = scrub.read(result.stdout)
    if now.state == "in progress":
        percent = now.percent or 0
        ctx.progress(int(percent), f"{percent:.1f}% scrubbed")
        return Wait(POLL_SECONDS, message=f"{percent:.1f}% scrubbed")
    if now.state == "finished":
        return Done({"pool": pool, "errors": now.errors, "ended": now.ended},
                    message=f"scrub of {pool} finished with {now.errors} errors")
    return Fail(f"the scrub of {pool} is {now.state}", code=f"scrub_{now.state.replace(' ', '_')}")


SCRUB = register(Kind("pools.scrub", {"start": start, "follow": follow}, "start",
                      mutating=False, deadline=timedelta(days=2)))
