"""Long remote work inside an Operation: start it detached, then poll it.

A step that runs pgbench or zfs send must stay short, so it starts the
command detached on the host under a unit name derived from the operation
(its idempotency key) and returns Wait; every later run of the step polls.
A worker that dies between the two finds the unit already there: the host
never runs the command twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apps.ops.engine import StepContext
from apps.ops.models import LogLine
from apps.remote import detached
from apps.remote.commands import Command
from apps.remote.detached import UnitStatus
from apps.remote.errors import RemoteError
from apps.remote.together import concurrently


def unit_for(ctx: StepContext, name: str) -> str:
    # No "pozol-" here: apps.remote.detached prefixes the systemd unit itself, and
    # a second prefix showed on hosts as pozol-pozol-op12-pgbench.
    return f"op{ctx.operation.pk}-{name}"


def advance(ctx: StepContext, name: str, command: Command) -> UnitStatus:
    """Start the unit if the host does not have it yet, and say where it stands.

    The log gets one line for the start: the command the unit runs, not the
    wrapper script that launches it (that is in the worker's debug log). A
    step run again finds the unit already there and adds no line.
    """
    from apps.remote.ssh import unobserved

    run, unit, work_dir = ctx.runner(), unit_for(ctx, name), ctx.host.work_dir
    try:
        with unobserved():
            started = detached.start(run, unit, command, work_dir,
                                     use_systemd=_has_systemd(ctx))
    except RemoteError:
        ctx.log(f"$ {command.redacted()}  -> could not be started as detached unit {unit}",
                LogLine.Level.WARNING)
        raise
    if started:
        ctx.log(f"$ {command.redacted()}  -> started on {ctx.host.name} as detached unit "
                f"{unit}", LogLine.Level.COMMAND)
    return detached.poll(run, unit, work_dir)


def follow(ctx: StepContext, name: str, command: Command, seconds: float, *,
           first: Command | None = None, after: Command | None = None) -> detached.Followed:
    """Start the unit if the host does not have it yet, wait up to `seconds` for it to
    end, and say where it stands and the end of its stderr: one round trip; with
    `first` run before the start (which needs it to succeed) and `after` once the unit
    has ended well (detached.follow_with), each logged as a command of its own."""
    return follow_beside(ctx, name, command, seconds, first=first, after=after)[0]


def follow_beside(ctx: StepContext, name: str, command: Command, seconds: float, *,
                  first: Command | None = None, after: Command | None = None,
                  beside: Callable[[], Any] | None = None) -> tuple[detached.Followed, Any]:
    """`follow`, and `beside` (SSH only, no database: it runs in a thread) at the same
    time, its value returned with what the follow saw (None without it)."""
    from apps.remote.ssh import unobserved

    unit, run, systemd = unit_for(ctx, name), ctx.runner(), _has_systemd(ctx)

    def followed() -> detached.Followed:
        with unobserved():
            return detached.follow_with(run, unit, command, ctx.host.work_dir, systemd,
                                        seconds, first=first, after=after)

    try:
        found, value = concurrently(followed, beside) if beside else (followed(), None)
    except RemoteError:
        ctx.log(f"$ {command.redacted()}  -> could not be followed as detached unit {unit}",
                LogLine.Level.WARNING)
        raise
    if found.first_code is not None:
        _log_part(ctx, first, found.first_code, unit)
    if found.started:
        ctx.log(f"$ {command.redacted()}  -> started on {ctx.host.name} as detached unit "
                f"{unit}", LogLine.Level.COMMAND)
    if found.after_code is not None:
        _log_part(ctx, after, found.after_code, unit)
    return found, value


def _log_part(ctx: StepContext, command: Command, code: int, unit: str) -> None:
    level = LogLine.Level.COMMAND if code == 0 else LogLine.Level.WARNING
    ctx.log(f"$ {command.redacted()}  -> exit {code} (with detached unit {unit})", level)


def output(ctx: StepContext, name: str, offset: int = 0, stream: str = "stdout") -> tuple[str, int]:
    return detached.read_output(ctx.runner(), unit_for(ctx, name), ctx.host.work_dir,
                                offset, stream)


def _has_systemd(ctx: StepContext) -> bool:
    return bool(ctx.host.facts.get("has_systemd"))
