"""A run's early holds: after a clean run, the target's newest common snapshot is held in
the plan's round trip, ahead of the target's listing, rather than in a round trip of its
own before the send (an incremental's plan asks for that hold).

The snapshot is the one the last run recorded as common; the listing, taken after the
hold, says whether it still is. The planner is given the hold as one the link holds
(`held`): a hold it wants is not taken again, one it does not want (a target changed by
hand, nothing to send) is released as one left by a run before, with the run's other
releases; a run that ends at its plan (refused, busy, no room) releases them at once.
Each is recorded in `held` before it is taken, as every hold of a run is.
"""

from __future__ import annotations

from apps.ops.engine import StepContext
from apps.ops.models import LogLine
from apps.remote.commands import Command, cmd, snapshot_name
from apps.remote.errors import RemoteError
from apps.remote.shell import Runner
from apps.replication import records
from apps.replication.core import bundles, commands
from apps.replication.core.planner import Side, Step, StepKind
from apps.replication.link_rows import core_link
from apps.replication.models import ReplicationLink


def holds(link: ReplicationLink, core) -> list[Step]:
    """After a clean run, the target's newest common snapshot held in the plan's round
    trip, ahead of its listing: the hold an incremental's plan asks for before its
    send, taken without a round trip of its own (the common snapshot is the one the
    last run recorded; the listing, taken after the hold, says whether it still is,
    and a hold the plan does not want is released as one left by a run before)."""
    if link.state != ReplicationLink.State.IN_SYNC or not link.common_snapshot:
        return []
    return [Step(StepKind.HOLD, Side.TARGET, f"{target}@{link.common_snapshot}",
                 f"hold {target}@{link.common_snapshot} (the common snapshot)")
            for target in core.targets().values()]


def batch(link: ReplicationLink, early: list[Step]) -> Command | None:
    """The early holds in one batch, each recorded in `held` before it is taken."""
    if not early:
        return None
    for step in early:
        records.note_held(link, records.entry(step), add=True)
    return _target_batch(link, "hold", early)


def _target_batch(link: ReplicationLink, verb: str, steps: list[Step]) -> Command:
    tag = core_link(link).hold_tag
    parts = [cmd("zfs", verb, tag, snapshot_name(step.dataset)) for step in steps]
    together = commands.together(steps, tag)
    return bundles.batch(parts, together=together, shown=together.redacted() if together
                         else "; ".join(c.redacted() for c in parts))


def judge(link: ReplicationLink, early: list[Step], output: str) -> list[str]:
    """The early holds that took (or were there already); a failed one's record dropped
    (its snapshot is gone or renamed: the plan reads the listing and decides)."""
    held = []
    for step, outcome in zip(early, bundles.outcomes(output, len(early)), strict=True):
        if outcome.ok or commands.hold_already_there(outcome.output):
            held.append(records.entry(step))
        else:
            records.note_held(link, records.entry(step), add=False)
    return held


def release(ctx: StepContext, link: ReplicationLink, run: Runner) -> None:
    """A run that ends at its plan gives the early holds back now; one that cannot be
    released stays in `held` for the next run's plan."""
    early = [Step(StepKind.RELEASE, Side.TARGET, entry.partition(":")[2], "release")
             for entry in ctx.state.get("early", [])]
    if not early:
        return
    try:
        result = run(_target_batch(link, "release", early), check=False)
    except RemoteError as exc:
        ctx.log(f"could not release the early holds now ({exc}); the next run will",
                LogLine.Level.WARNING)
        return
    for step, outcome in zip(early, bundles.outcomes(result.stdout, len(early)), strict=True):
        if outcome.ok or commands.hold_not_there(outcome.output):
            records.note_held(link, records.entry(step), add=False)
