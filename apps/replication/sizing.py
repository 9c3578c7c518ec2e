"""How big a run's sends are, where each will arrive, and whether the target has room.

The sizes are `zfs send -nvP`'s where the source has it (OpenZFS), else estimates from
the plan's own listing (used/referenced, labelled so); a run is refused before anything
is held or sent when its receives would take a target pool below its reserve.
"""

from __future__ import annotations

from collections.abc import Iterator

from apps.fleet import reserves
from apps.ops.engine import Fail, StepContext
from apps.remote.shell import Runner
from apps.replication import records
from apps.replication.core import commands, progress
from apps.replication.core.capabilities import ReplicationCapabilities
from apps.replication.core.planner import Send, Step
from apps.replication.models import ReplicationLink


def room(ctx: StepContext, link: ReplicationLink, steps: tuple[Step, ...],
         rooms: dict[str, str], run: Runner) -> Fail | None:
    """Refused, before anything is held or sent, when the run's receives would take a
    target pool below its reserve (apps.fleet.core.room), its free space read on the
    target now. The sizes are `zfs send -nvP`'s where the source has it (OpenZFS), else
    the listing's estimate (zfs-fuse has no -n: progress.estimate_from_listing)."""
    for index, step in enumerate(steps):
        exact = exact_size(ctx, step.send) if step.send is not None else None
        if exact is not None:
            ctx.state["expected"][f"send{index}"] = exact
    sizes = progress.receive_sizes([step.send for step in steps], ctx.state["expected"])
    for pool, size in sizes.items():
        try:
            shortage = reserves.refusal_in_text(link.target_host, pool, rooms.get(pool, ""),
                                                size, "this run's receive")
        except ValueError:  # not read with the listing: read it now
            shortage = reserves.refusal_on_host(run, link.target_host, pool, size,
                                                "this run's receive")
        if shortage:
            records.record_outcome(link, ReplicationLink.State.REFUSED, shortage.message)
            return Fail(f"refused: {shortage.message}", code="no_room")
    return None


def exact_size(ctx: StepContext, send: Send) -> dict | None:
    """`zfs send -nvP` where the source has it; elsewhere the plan's estimate stands."""
    if not ReplicationCapabilities(**ctx.state["source_caps"]).send_estimate or send.resume_token:
        return None
    result = ctx.runner()(commands.estimate_command(send), timeout=300, check=False)
    size = progress.parse_send_estimate(result.stdout) if result.ok else None
    return {"bytes": size, "exact": True, "label": "expected"} if size is not None else None


def _sends(steps: tuple[Step, ...]) -> Iterator[tuple[str, Send]]:
    """Each send of a snapshot, under its key in the run's state ("send<index>")."""
    for index, step in enumerate(steps):
        if step.send is not None and step.send.snapshot is not None:
            yield f"send{index}", step.send


def estimates(steps: tuple[Step, ...], sources: dict) -> dict[str, dict]:
    """The size of each send from the plan's own listing (used/referenced), labelled an
    estimate; sends whose snapshots it cannot size are left out."""
    found = {}
    for key, send in _sends(steps):
        to = send.snapshot.partition("@")[2]
        from_ = send.from_snapshot.partition("@")[2] if send.from_snapshot else None
        estimate = progress.estimate_from_listing(sources[send.source].snapshots, to, from_)
        if estimate is not None:
            found[key] = {"bytes": estimate.bytes, "exact": False,
                                     "label": estimate.label}
    return found


def arrivals(steps: tuple[Step, ...], sources: dict) -> dict[str, list]:
    """Each send's snapshot as the target will have it: [dataset, snapshot, guid]."""
    found = {}
    for key, send in _sends(steps):
        name = send.snapshot.partition("@")[2]
        guid = next((s.guid for s in sources[send.source].snapshots if s.name == name), None)
        if guid is not None:
            found[key] = [send.target, f"{send.target}@{name}", guid]
    return found


def expected_of(expected: dict | None) -> progress.Expected | None:
    return progress.Expected(expected["bytes"], expected["exact"]) if expected else None
