"""A run's early holds: after a clean run, the target's newest common snapshot is held in
the plan's round trip, ahead of the target's listing, rather than in a round trip of its
own before the send (an incremental's plan asks for that hold).

The snapshot is the one the last run recorded as common; the listing, taken after the
hold, says whether it still is. The planner is given the hold as one the link holds
(`held`): a hold it wants is not taken again, one it does not want (a target changed by
hand, nothing to send) is released as one left by a run before, with the run's other
releases; a run that ends at its plan (refused, busy, no room) releases them at once.
Each is recorded in `held` before it is taken, as every hold of a run is.

Before a clean run (a new link, or one whose last run did not end in sync), the
targets' parents are made (if missing) in the same round trip: a full send's plan asks
for them before its send, and with them made the quick steps left before the send are
the source's holds, which go in the send's own round trip. Each prints the deepest of
its ancestors that was there already, so a run that ends at its plan destroys what it
made (deepest first, never recursively), as it gives its early holds back: a refused
run leaves the target as it found it.
"""

from __future__ import annotations

from apps.ops.engine import StepContext
from apps.ops.models import LogLine
from apps.remote.commands import Command, cmd, dataset_name, script, snapshot_name
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


def parents(link: ReplicationLink, core) -> list[str]:
    """Before a clean run, the parents of the link's targets, to make in the plan's
    round trip (see the module docstring)."""
    if link.state == ReplicationLink.State.IN_SYNC and link.common_snapshot:
        return []
    return sorted({target.rsplit("/", 1)[0] for target in core.receiving() if "/" in target})


# The deepest ancestor of the parent (itself included) that is there, then the create.
_PARENT = """\
a={name}; until zfs list -H -o name "$a" > /dev/null 2>&1 || [ "$a" = "${{a%/*}}" ]; do \
a=${{a%/*}}; done; {create} && echo "pozol-there-before:$a"
"""


def parents_batch(names: list[str]) -> Command | None:
    if not names:
        return None
    parts = [script(_PARENT, name=dataset_name(name), create=commands.ensure_parent(name),
                    shown=commands.ensure_parent(name).redacted()) for name in names]
    return bundles.batch(parts, shown="; ".join(c.redacted() for c in parts))


def made(names: list[str], output: str) -> tuple[list[str], list[str]]:
    """The parents there now (made, or there already), and the datasets this round trip
    made, deepest first; a parent that failed is left to the plan's own step, which
    says why."""
    there, created = [], []
    for name, outcome in zip(names, bundles.outcomes(output, len(names)), strict=True):
        marker = outcome.output.rpartition("pozol-there-before:")[2].strip()
        if not outcome.ok or not marker:
            continue
        there.append(name)
        level = name
        while level.startswith(f"{marker}/"):
            created.append(level)
            level = level.rsplit("/", 1)[0]
    return there, sorted(set(created), key=lambda d: -d.count("/"))


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
    """A run that ends at its plan gives the early holds back now (one that cannot be
    released stays in `held` for the next run's plan) and destroys the parents it made."""
    _unmake_parents(ctx, run)
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


# zfs-fuse keeps a just-made dataset's mount busy for a moment: a busy one is tried again
# for up to 3 s; any other refusal (something went into it) is final.
_UNMAKE = """\
i=0; until out=$(zfs destroy {name} 2>&1); do case $out in *busy*) ;; *) echo "$out"; \
exit 1;; esac; i=$((i + 1)); [ "$i" -lt 12 ] || {{ echo "$out"; exit 1; }}; sleep 0.25; done
"""


def _unmake_parents(ctx: StepContext, run: Runner) -> None:
    """`zfs destroy` (never -r) of each parent the plan's round trip made, deepest first:
    one that something else went into meanwhile stays, and is said."""
    created = ctx.state.get("parents_made") or []
    if not created:
        return
    parts = [script(_UNMAKE, name=dataset_name(name), shown=f"zfs destroy {name}")
             for name in created]
    try:
        result = run(bundles.batch(parts, shown="; ".join(c.redacted() for c in parts)),
                     check=False)
    except RemoteError as exc:
        ctx.log(f"could not destroy the target parents this run made ({exc}): "
                f"{', '.join(created)}", LogLine.Level.WARNING)
        return
    kept = [f"{name} ({outcome.output.strip()[-200:]})" for name, outcome in zip(
        created, bundles.outcomes(result.stdout, len(created)), strict=True) if not outcome.ok]
    if kept:
        ctx.log(f"kept the target parents this run made: {'; '.join(kept)}",
                LogLine.Level.WARNING)
