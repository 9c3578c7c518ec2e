"""Replication's operation kinds: run a link, and remove what a deleted link left.

`replication.run` (on the source host), as zrepl's loop does:
  plan     the link's key pair exists, its receive-only line is in the target's
           authorized_keys and its private key and the target's pinned host key
           are in the source's work dir (again after anything but a clean
           run, or when the archive it carries changed); after a clean run, the
           target's common snapshot held (apps.replication.early); the source
           cluster's WAL archive, while PoZoL archives it, is snapshotted and listed
           (apps.wal.core.commands.carry); both sides listed and planned by the
           pure planner; refused, busy or in sync ends here
  execute  the plan's steps in order, the quick ones back to back (holds and the
           like in one batch per side); a SEND runs detached on the source
           (`op<id>-send<i>`), so a worker that dies does not stop it: each follow
           starts it if missing (after the source's quick steps before it, in the
           same round trip, when the target has none), waits on the host for its
           end and reads where it stands in one round trip
           (detached.follow_with); the step follows it for up to a minute, each
           wait as long as the rate so far foresees the end (15 s at most)
  finish   the quick steps after the last send (releases, the target's
           properties); both inventories refreshed, the newest common snapshot and
           the newest received recorded (lag counts from it); a carried archive's
           received snapshot, its listing and the target's window recorded
           (apps.wal.copies), and the link's older archive snapshots destroyed
           on both sides (each pins WAL the source's retention removed)
  prune    the target's keep rules (the link's counts, each received
           snapshot's policy identity), sparing the newest common snapshot

A run's overhead around its transfer is its SSH round trips, and zfs-fuse makes each
hold, release or create wait for a transaction group: so the two hosts are asked at
once (apps.remote.together), and each host once per stage: the key's files, the
target's early hold, the listing and the pool's room in plan; the holds (one
`zfs hold` of every snapshot) before a send, in the send's own round trip when only
the source has steps before it (an incremental after a clean run: plan, transfer,
finish are its three round trips); the releases, the listing, the inventory's listing
and the unit files' removal in finish (apps.replication.core.bundles), in that order on
each host.

What a run holds is recorded on the link (`held`) as it holds it (a batch's holds
before it runs), so a run killed mid-transfer leaves a record the next plan releases.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.fleet.core import room
from apps.fleet.models import Host
from apps.ops import remote_jobs
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, Wait, register
from apps.ops.models import LogLine
from apps.remote.commands import Command, cmd, script, snapshot_name
from apps.remote.errors import RemoteError
from apps.remote.together import concurrently
from apps.replication import carrying, keying, pruning, records, sizing
from apps.replication import early as early_holds
from apps.replication.core import arrival, bundles, commands, listing, planner, progress
from apps.replication.core.capabilities import ReplicationCapabilities
from apps.replication.core.lag import newest_received
from apps.replication.core.planner import (
    Action,
    Side,
    Step,
    StepKind,
    plan_link,
)
from apps.replication.link_rows import capabilities_of, core_link, endpoint
from apps.replication.models import ReplicationLink
from apps.snapshots.core import commands as snapshot_commands
from apps.wal.models import WalArchive

WAIT_SECONDS = 3.0  # a follow waits this long on the host for a transfer to end, at least
MAX_WAIT_SECONDS = 15.0  # and this long at most
FOLLOW_SECONDS = 60.0  # a step follows a transfer this long, then is delivered again
GUESSED_RATE = 128 << 20  # bytes a second a transfer is taken to move before it says
TAIL = 600


# ---- plan ---------------------------------------------------------------------------------

def plan(ctx: StepContext) -> Next | Done | Fail:
    link = _link(ctx)
    if link is None:
        return Fail("the link was deleted", code="link_gone")
    carried = carrying.carried(link)
    if carried != link.archive:
        ctx.log(f"carrying the WAL archive {carried}" if carried
                else f"no longer carrying the WAL archive {link.archive}: archiving is off")
        link.archive = carried
        fields = {"archive": carried}
        if not carried:
            fields |= {"archive_snapshot": "", "archive_listing": {}, "archive_floor": None,
                       "archive_window": []}
        ReplicationLink.objects.filter(pk=link.pk).update(**fields)
        link.key_installed_at = None  # its key may receive into the archive's copy too
    key = {}
    if not (link.key_installed_at and link.state == ReplicationLink.State.IN_SYNC):
        key = keying.key_commands(link)  # again after anything but a clean run
        if isinstance(key, Fail):
            return key
    core = core_link(link)
    if core.archive:
        carried = WalArchive.objects.filter(cluster__host=link.source_host,
                                            dataset=core.archive).select_related("cluster")
        archive = carried.first()
        if archive is None:
            return Fail(f"archiving of {core.archive} was turned off while this run "
                        "started: run it again", code="refused")
        carrying.snapshot_archive(ctx, core, archive)
    early = early_holds.holds(link, core)
    source_caps, target_caps, chosen, sources, rooms = _plan(ctx, link, core, key, early)
    if key:
        ReplicationLink.objects.filter(pk=link.pk).update(key_installed_at=timezone.now())
    ctx.state["plan_action"] = chosen.action.value
    for dataset in chosen.datasets:
        ctx.log(f"{dataset.source} -> {dataset.target}: {dataset.action.value}: "
                f"{dataset.reason}")
        if dataset.stream is not None and any(s.send for s in dataset.steps):
            ctx.log(f"{dataset.source}: zfs send {dataset.stream.text}")
    for note in chosen.notes + tuple(n for d in chosen.datasets for n in d.notes):
        ctx.log(f"note: {note}")
    if chosen.action in (Action.REFUSED, Action.BUSY):
        early_holds.release(ctx, link, _on(link.target_host))
        if ctx.state.get("carry"):
            carrying.drop_carry(ctx, core)
    if chosen.action is Action.REFUSED:
        reasons = "; ".join(chosen.reasons())
        records.record_outcome(link, ReplicationLink.State.REFUSED, reasons)
        return Fail(f"refused: {reasons}", code="refused")
    if chosen.action is Action.BUSY:
        records.record_outcome(link, ReplicationLink.State.BUSY,
                        "; ".join(d.reason for d in chosen.datasets if d.action is Action.BUSY))
        return Done({"action": chosen.action.value}, message="target busy: nothing done")
    # A hold the plan's round trip took already is not taken again, nor a parent it made.
    early, made = set(ctx.state["early"]), set(ctx.state["parents"])
    kept = tuple(s for s in chosen.steps
                 if not (s.kind is StepKind.HOLD and records.entry(s) in early)
                 and not (s.kind is StepKind.ENSURE_PARENT and s.dataset in made))
    ctx.state["steps"] = [records.step_dict(s) for s in kept]
    ctx.state["index"] = 0
    ctx.state["sending"] = chosen.sending
    ctx.state["source_caps"] = asdict(source_caps)
    ctx.state["target_caps"] = asdict(target_caps)
    ctx.state["transfer"] = {"bytes": 0, "seconds": 0.0}
    ctx.state["expected"] = sizing.estimates(kept, sources)
    ctx.state["arrivals"] = sizing.arrivals(kept, sources)
    refused = sizing.room(ctx, link, kept, rooms, _on(link.target_host))
    if refused is not None:
        early_holds.release(ctx, link, _on(link.target_host))
        return refused
    if link.resume_failed:
        ReplicationLink.objects.filter(pk=link.pk).update(resume_failed=False)
    return Next("execute", message=f"{chosen.action.value}: {len(kept)} steps",
                progress=10)


def _list_sides(ctx: StepContext, link: ReplicationLink, core,
                source_caps: ReplicationCapabilities, target_caps: ReplicationCapabilities,
                source_extra: tuple[Command, ...] = (),
                target_extra: tuple[Command, ...] = (),
                source_before: tuple[Command, ...] = (),
                target_before: tuple[Command, ...] = ()) -> _Sides:
    """Both sides at once, one round trip each: the source's listing (with its tools)
    and the target's states keyed by target dataset (the carried archive's among
    them); `*_extra`, more commands run after each side's listing in the same round
    trip (each must succeed), their outputs returned in order; `*_before`, commands
    run ahead of the listing (a batch, the key's files), their outputs returned too."""
    datasets = core.sources + ((core.archive,) if core.archive else ())
    receiving = core.receiving()
    source_command = _chain(listing.source_command(datasets, source_caps), source_extra,
                            source_before)
    target_command = _chain(listing.target_command(receiving, target_caps), target_extra,
                            target_before)
    source, target = ctx.runner(), _on(link.target_host)
    source_text, target_text = concurrently(
        lambda: source(source_command, timeout=300).stdout,
        lambda: target(target_command, timeout=300).stdout)
    source_first, source_parts = _parts(source_text, source_extra, source_before)
    target_first, target_parts = _parts(target_text, target_extra, target_before)
    return _Sides(listing.parse_source(source_parts[0], datasets),
                  listing.parse_target(target_parts[0], receiving).targets,
                  tuple(source_parts[1:]), tuple(target_parts[1:]), source_first, target_first)


def _parts(text: str, extra: tuple, before: tuple) -> tuple[tuple[str, ...], list[str]]:
    """The outputs of `before`, and the listing's and the extras'."""
    found = bundles.parts(text, len(before) + 1 + len(extra))
    return tuple(found[:len(before)]), found[len(before):]


@dataclass(frozen=True)
class _Sides:
    listed: listing.SideListing  # the source's
    on_target: dict  # target dataset -> TargetState
    source_extra: tuple[str, ...] = ()
    target_extra: tuple[str, ...] = ()
    source_before: tuple[str, ...] = ()
    target_before: tuple[str, ...] = ()


def _chain(command: Command, extra: tuple[Command, ...],
           before: tuple[Command, ...] = ()) -> Command:
    every = (*before, command, *extra)
    if len(every) == 1:
        return command
    return bundles.chained(*every, shown=", ".join(c.redacted() for c in every))


def _only(command: Command | None) -> tuple[Command, ...]:
    return (command,) if command is not None else ()


def _target_pools(core) -> tuple[str, ...]:
    return tuple(sorted({dataset.split("/")[0] for dataset in core.receiving()}))


def _plan(ctx: StepContext, link: ReplicationLink, core, key: dict[Side, Command],
          early: list[Step]) -> tuple:
    source_caps = capabilities_of(link.source_host)
    target_caps = capabilities_of(link.target_host)
    pools = _target_pools(core)
    early_batch = early_holds.batch(link, early)
    parents = early_holds.parents(link, core)
    parents_batch = early_holds.parents_batch(parents)
    target_before = [c for c in (key.get(Side.TARGET), early_batch, parents_batch)
                     if c is not None]
    left = (link.last_transfer or {}).get("units")  # a run that finished in its transfer's
    source_before = [c for c in (key.get(Side.SOURCE),  # round trips left them
                                 _units_removal(ctx, left) if left else None) if c is not None]
    # The pools' room, read with the listing: the check before any hold or send
    # costs no round trip of its own (a pool it cannot read is read again then).
    sides = _list_sides(ctx, link, core, source_caps, target_caps, target_extra=tuple(
        script("{read} 2>/dev/null || :", read=room.read_command(pool),
               shown=f"{pool}'s used and available") for pool in pools),
        source_before=tuple(source_before), target_before=tuple(target_before))
    outputs = list(sides.target_before)
    ctx.state["parents"], ctx.state["parents_made"] = (
        early_holds.made(parents, outputs.pop()) if parents_batch is not None else ([], []))
    if early_batch is not None:
        ctx.state["early"] = early_holds.judge(link, early, outputs.pop())
        link.held = ReplicationLink.objects.values_list("held", flat=True).get(pk=link.pk)
    ctx.state.setdefault("early", [])
    sources, on_target = sides.listed, sides.on_target
    source_caps = replace(source_caps, pv="pv" in sources.tools,
                          mbuffer="mbuffer" in sources.tools)
    _note_encryption(link, sources.sources)
    target_states = {source: on_target[target] for source, target in core.targets().items()}
    if core.archive:
        target_states[core.archive] = on_target[core.archive_target]
        floor = carrying.archive_floor(core, sources.sources)
        ctx.state.setdefault("carry", {})["floor"] = floor
    chosen = plan_link(core, sources.sources, target_states, source_caps, target_caps,
                       held=link.held, resume_failed=link.resume_failed)
    rooms = dict(zip(pools, sides.target_extra, strict=True))
    return source_caps, target_caps, chosen, sources.sources, rooms


def _note_encryption(link: ReplicationLink, sources: dict) -> None:
    """Each source dataset's `encryption` as this run read it, for the link page's
    preview of the stream flags (a dataset's encryption is fixed when it is made)."""
    found = {name: state.encryption.cipher for name, state in sources.items()
             if state.encryption is not None}
    if found != link.source_encryption:
        ReplicationLink.objects.filter(pk=link.pk).update(source_encryption=found)


# ---- execute ------------------------------------------------------------------------------

def execute(ctx: StepContext) -> Next | Wait | Done | Fail:
    link = _link(ctx)
    if link is None:
        return Fail("the link was deleted", code="link_gone")
    planned = [records.step_of(s) for s in ctx.state["steps"]]
    index = ctx.state["index"]
    if all(s.kind in BATCHED for s in planned[index:]):
        # Nothing but quick steps left (releases, properties): they run in finish's
        # round trips, ahead of its listings (which must see them done).
        return Next("finish", progress=90)
    first = _source_steps_before_send(planned, index)
    if planned[index].kind is StepKind.SEND or first:
        at = index + len(first)
        outcome = _send(ctx, link, planned, at, first)
        if outcome is not None:
            return outcome
        index = at + 1
        ctx.state["index"] = index
        if all(s.kind in BATCHED for s in planned[index:]):
            return Next("finish", message=planned[at].text[:300], progress=90)
    # The steps up to the next send run back to back, rather than one delivery per
    # step; holds, releases and the like in one round trip per side, both sides at
    # once (_run_batch). Each is safe to repeat if the worker dies among them and
    # the step runs again from the saved index.
    while index < len(planned) and planned[index].kind is not StepKind.SEND:
        if _source_steps_before_send(planned, index):
            break  # they go in the send's own round trip
        end = _batch_end(planned, index)
        failed = _run_batch(ctx, link, planned[index:end]) if end > index + 1 else (
            _first_failure(_run_step(ctx, link, planned[index])))
        if failed is not None:
            position, failure = failed
            _release_after_failure(ctx, link, planned[index + position + 1:])
            return failure
        index = end
    ctx.state["index"] = index
    # The next step is a send: started now rather than after another delivery. A
    # worker that dies here runs this step again from the saved index: the quick
    # steps again (each safe to repeat), then the send (its unit never twice).
    ctx.progress(10 + int(80 * index / len(planned)), planned[index - 1].text[:300])
    return execute(ctx)


def _source_steps_before_send(planned: list[Step], index: int) -> list[Step]:
    """The quick steps from `index` when all of them are the source's and a send
    follows: they run in the send's round trip, the send started only if they
    succeeded (detached.follow_with's `first`). Else none."""
    end = _batch_end(planned, index)
    quick = planned[index:end]
    if (end < len(planned) and planned[end].kind is StepKind.SEND and quick
            and all(s.kind in BATCHED and s.side is Side.SOURCE for s in quick)):
        return quick
    return []


# Quick steps that may run together, every one whatever the others did: each is safe
# alone (a hold, a release, the target's parent and properties), none destroys.
BATCHED = frozenset({StepKind.HOLD, StepKind.RELEASE, StepKind.RELEASE_STALE,
                     StepKind.ENSURE_PARENT, StepKind.FIX_PROPERTIES})


def _batch_end(planned: list[Step], index: int) -> int:
    """The end of the run of BATCHED steps from `index` (index + 1 at least)."""
    end = index
    while end < len(planned) and planned[end].kind in BATCHED:
        end += 1
    return max(end, index + 1)


def _run_batch(ctx: StepContext, link: ReplicationLink,
               steps: list[Step]) -> tuple[int, Fail] | None:
    """`steps` in one round trip per side, both sides at once; the first failure and
    its position, or None (_judge_batch)."""
    batches = _batches(ctx, link, steps)
    results = concurrently(*(lambda run=run, command=command: run(command, timeout=600,
                                                                  check=False)
                             for _, run, _, command in batches))
    return _judge_batch(ctx, link, steps, batches, [r.stdout for r in results])


def _batches(ctx: StepContext, link: ReplicationLink, steps: list[Step],
             strict: bool = False) -> list[tuple]:
    """(side, runner, [(position, step)], batch command) per side that has steps. Holds are
    recorded before they are taken: a worker that dies meanwhile leaves a record the
    next plan releases (a release of a hold that is not there is harmless)."""
    for step in steps:
        if step.kind is StepKind.HOLD:
            records.note_held(link, f"{step.side.value}:{step.dataset}", add=True)
    found = []
    for side in Side:
        items = [(i, s) for i, s in enumerate(steps) if s.side is side]
        if not items:
            continue
        run = ctx.runner() if side is Side.SOURCE else _on(link.target_host)
        parts = [_step_command(ctx, link, step) for _, step in items]
        together = commands.together([step for _, step in items], core_link(link).hold_tag)
        found.append((side, run, items, bundles.batch(
            parts, shown=together.redacted() if together else "; ".join(
                c.redacted() for c in parts), together=together, strict=strict)))
    return found


def _judge_batch(ctx: StepContext, link: ReplicationLink, steps: list[Step],
                 batches: list[tuple], outputs: list[str]) -> tuple[int, Fail] | None:
    """Each step judged in order as _run_step judges one (every hold that took
    recorded, a failed one's record dropped); the first failure and its position."""
    found: dict[int, bundles.Outcome] = {}
    for (_, _, items, _), output in zip(batches, outputs, strict=True):
        for (i, _), outcome in zip(items, bundles.outcomes(output, len(items)), strict=True):
            found[i] = outcome
    first = None
    for i, step in enumerate(steps):
        outcome = found[i]
        if not outcome.ok:
            ctx.log(f"{step.text}  -> " + (f"exit {outcome.exit_code}"
                    if outcome.exit_code != bundles.NOT_RUN else "not run")
                    + (f"\n{outcome.output[-1000:]}" if outcome.output else ""),
                    LogLine.Level.WARNING)
        failure = _judge(link, step, outcome.ok, outcome.output, "")
        if failure is not None and step.kind is StepKind.HOLD and (
                outcome.exit_code != bundles.NOT_RUN):
            records.note_held(link, f"{step.side.value}:{step.dataset}", add=False)
        if failure is not None and first is None:
            first = (i, failure)
    return first


def _first_failure(failure: Fail | None) -> tuple[int, Fail] | None:
    return None if failure is None else (0, failure)


def _step_command(ctx: StepContext, link: ReplicationLink, step: Step) -> Command:
    return commands.step_command(step, core_link(link), endpoint(link),
                                 _caps(ctx, "source_caps"))


def _run_step(ctx: StepContext, link: ReplicationLink, step: Step) -> Fail | None:
    run = ctx.runner() if step.side is Side.SOURCE else _on(link.target_host)
    command = _step_command(ctx, link, step)
    if step.kind is StepKind.ROLLBACK:
        who = link.rollback_opted_in_by or "an operator"
        when = link.rollback_opted_in_at.isoformat() if link.rollback_opted_in_at else "?"
        ctx.log(f"rolling back {step.dataset} (opted in by {who} at {when}): {step.text}",
                LogLine.Level.WARNING)
    result = run(command, timeout=600, check=False)
    return _judge(link, step, result.ok, result.stderr, result.stdout)


def _judge(link: ReplicationLink, step: Step, ok: bool, stderr: str,
           stdout: str) -> Fail | None:
    """A quick step's outcome: None when it did what the plan needs (a hold already
    there, a release of one gone), a hold noted or a release forgotten; else Fail."""
    if step.kind is StepKind.HOLD:
        if ok or commands.hold_already_there(stderr):
            records.note_held(link, f"{step.side.value}:{step.dataset}", add=True)
            return None
    elif step.kind in (StepKind.RELEASE, StepKind.RELEASE_STALE):
        if ok or commands.hold_not_there(stderr) or "dataset does not exist" in stderr:
            records.note_held(link, f"{step.side.value}:{step.dataset}", add=False)
            return None
    elif ok or (step.kind is StepKind.DISCARD_PARTIAL
                and "resumable receive state" in stderr):
        return None  # a discard run again finds nothing left to discard
    why = (stderr or stdout).strip()[-TAIL:]
    records.record_outcome(link, ReplicationLink.State.FAILED, f"{step.text}: {why}")
    return Fail(f"{step.text} failed: {why}", code=f"{step.kind.value}_failed")


def _send(ctx: StepContext, link: ReplicationLink, planned: list[Step], index: int,
          first: list[Step]) -> Done | Wait | Fail | None:
    """None when the transfer is done; Wait while it runs; Fail when it (or `first`, the
    source's quick steps run in its round trip before it starts) failed; Done when the
    run's finish was done in the last follow's round trips (_closing). The step
    follows the unit for up to FOLLOW_SECONDS, each follow waiting on the host for its
    end (so the end is seen within a tick, not at the next delivery)."""
    step = planned[index]
    assert step.send is not None
    name = f"send{index}"
    if name not in ctx.state.setdefault("started", {}):
        records.note_large_blocks(link, step.send)
        if not (ctx.state["expected"].get(name) or {}).get("exact"):  # none at the plan
            exact = sizing.exact_size(ctx, step.send)
            if exact is not None:
                ctx.state["expected"][name] = exact
        ctx.state["started"][name] = time.time()
    expected = ctx.state["expected"].get(name)
    command = commands.pipeline(step.send, endpoint(link), _caps(ctx, "source_caps"),
                                link.bandwidth_limit)
    begun, window, sent = time.monotonic(), WAIT_SECONDS, 0
    closing = _closing(ctx, link, planned, index)
    while True:
        batches = _batches(ctx, link, first, strict=True) if first else []
        beside = closing and _ends_within(ctx, name, sent, expected, window)
        found, arrived = remote_jobs.follow_beside(
            ctx, name, command, window, first=batches[0][3] if batches else None,
            after=closing.source if closing else None,
            beside=_target_wait(link, closing, window) if beside else None)
        if first:
            failed = _judge_batch(ctx, link, first, batches, [found.first or ""])
            if failed is not None:
                at = index - len(first)
                _release_after_failure(ctx, link, planned[at + failed[0] + 1:])
                return failed[1]
            ctx.state["index"] = index  # the quick steps are done
            if found.first_code != 0:  # done already (a run again): start it now
                first = []
                continue
            first = []
        sent = progress.parse_counter(found.err) or 0
        if found.status.state != "running":
            failed = _sent(ctx, link, planned, index, found, sent)
            return failed or (_closed(ctx, link, closing, found, arrived) if closing else None)
        _show_progress(ctx, step, index, len(planned), sent, expected)
        if time.monotonic() - begun >= FOLLOW_SECONDS:
            return Wait(0)
        window = progress.next_wait(sent, expected["bytes"] if expected else None,
                                    time.time() - ctx.state["started"][name],
                                    WAIT_SECONDS, MAX_WAIT_SECONDS)


def _ends_within(ctx: StepContext, name: str, sent: int, expected: dict | None,
                 window: float) -> bool:
    """Whether the transfer may end within this follow's wait, as its rate so far
    (before any, GUESSED_RATE) foresees it, with room for a rate read too low early
    on: the target then waits for it alongside (a wait that costs one `zfs get` a tick
    on the target, so not for the whole of a long transfer)."""
    elapsed = time.time() - ctx.state["started"][name]
    rate = sent / elapsed if sent > 0 and elapsed > 0 else GUESSED_RATE
    if not expected or not expected.get("bytes"):
        return True
    return max(0, expected["bytes"] - sent) / rate < 2 * window


@dataclass(frozen=True)
class _Closing:
    """The finish of a run, read in its last send's round trips: the source's part run
    once the unit ended well (`after`), the target's once the snapshot arrived."""

    trailing: list[Step]
    batches: list[tuple]
    source: Command
    target: Command
    arrival: list  # [target dataset, snapshot, guid]


def _closing(ctx: StepContext, link: ReplicationLink, planned: list[Step],
             index: int) -> _Closing | None:
    """For the run's last send, unless it carries an archive (whose finish does more):
    each side's steps after it, listing and inventory's listing, as finish runs them."""
    trailing, core = planned[index + 1:], core_link(link)
    arrival = ctx.state.get("arrivals", {}).get(f"send{index}")
    if core.archive or not arrival or not all(s.kind in BATCHED for s in trailing):
        return None
    batches = _batches(ctx, link, trailing)
    before = {side: command for side, _, _, command in batches}
    inventory = snapshot_commands.listing()
    source = _chain(listing.source_command(core.sources, _caps(ctx, "source_caps")),
                    (inventory,), _only(before.get(Side.SOURCE)))
    target = _chain(listing.target_command(core.receiving(), _caps(ctx, "target_caps")),
                    (inventory,), _only(before.get(Side.TARGET)))
    return _Closing(trailing, batches, source, target, arrival)


def _target_wait(link: ReplicationLink, closing: _Closing, seconds: float) -> Callable:
    """The target's part of the closing, behind a wait for the snapshot's arrival."""
    wait = arrival.wait_command(*closing.arrival, seconds)
    command = bundles.chained(wait, closing.target,
                              shown=f"{wait.redacted()}, {closing.target.redacted()}")
    run = _on(link.target_host)

    def wait() -> str | None:
        try:
            return run(command, timeout=seconds + 300, check=False).stdout
        except RemoteError:  # the source's follow says how the transfer went; finish then
            return None      # reads the target (and fails the run if it still cannot)
    return wait


def _closed(ctx: StepContext, link: ReplicationLink, closing: _Closing, found,
            target_text: str | None) -> Done | Fail | None:
    """The finish from the closing's outputs, or None (finish then runs as ever) when a
    side did not do its part: the snapshot had not arrived, a command failed."""
    sides_of = [side for side, *_ in closing.batches]
    try:
        if found.after_code != 0 or not target_text:
            return None
        source = bundles.parts(found.after or "", 2 + sides_of.count(Side.SOURCE))
        target = bundles.parts(target_text, 3 + sides_of.count(Side.TARGET))
    except ValueError:
        return None
    if target.pop(0).strip() != "pozol-arrived":
        return None
    core = core_link(link)
    sides = _Sides(listing.parse_source(source[-2], core.sources),
                   listing.parse_target(target[-2], core.receiving()).targets,
                   (source[-1],), (target[-1],))
    outputs = [source[0] if side is Side.SOURCE else target[0] for side in sides_of]
    closed = _close(ctx, link, core, closing.trailing, closing.batches, outputs, sides,
                    units_left=True)
    # prune now rather than after a delivery of its own: run again, it prunes by what the
    # target then lists, as its own step would.
    return prune(ctx) if isinstance(closed, Next) else closed


def _show_progress(ctx: StepContext, step: Step, index: int, total: int, sent: int,
                   expected: dict | None) -> None:
    fraction = progress.Progress(sent, sizing.expected_of(expected)).fraction
    label = f"{_size(sent)} of {_size(expected['bytes'])} {expected['label']}" if expected \
        else f"{_size(sent)} sent"
    share = 80 / total
    ctx.progress(10 + int(share * index + share * (fraction or 0)), f"{step.text}: {label}")


def _sent(ctx: StepContext, link: ReplicationLink, planned: list[Step], index: int,
          found, sent: int) -> Fail | None:
    """The transfer's end: recorded, or the run failed (its holds released)."""
    step, name = planned[index], f"send{index}"
    seconds = time.time() - ctx.state["started"].get(name, time.time())
    status, err = found.status, found.err
    failed = status.state != "succeeded" or commands.send_failed(err)
    if failed:
        why = progress.pipeline_messages(err, TAIL) or f"the transfer unit ended {status.state}"
        if step.send.resume_token:
            ReplicationLink.objects.filter(pk=link.pk).update(resume_failed=True)
        records.record_outcome(link, ReplicationLink.State.FAILED, f"{step.text}: {why}")
        _release_after_failure(ctx, link, planned[index + 1:])
        return Fail(f"{step.text} failed (exit {status.exit_code}): {why}",
                    code="transfer_failed")
    transfer = ctx.state["transfer"]
    transfer["bytes"] += sent
    transfer["seconds"] += seconds
    ctx.log(f"{step.text}: {_size(sent)} in {seconds:.1f} s"
            + (f" ({_size(int(sent / seconds))}/s)" if seconds > 0 else ""))
    return None


def _units_removal(ctx: StepContext, prefix: str | None = None) -> Command:
    """The finished transfers' unit files (this run's, or those `prefix` names: the
    ones a run before left), all in one command."""
    prefix = prefix or remote_jobs.unit_for(ctx, "send")
    return script("cd {dir} 2>/dev/null && rm -f -- {prefix}*", dir=ctx.host.work_dir,
                  prefix=prefix, shown=f"remove the files of units {prefix}*")


def _release_after_failure(ctx: StepContext, link: ReplicationLink, rest: list[Step]) -> None:
    """Release the holds of a failed run now; what cannot be released stays in `held`
    for the next run's plan."""
    for step in rest:
        if step.kind is not StepKind.RELEASE:
            continue
        run = ctx.runner() if step.side is Side.SOURCE else _on(link.target_host)
        command = commands.step_command(step, core_link(link), endpoint(link),
                                        _caps(ctx, "source_caps"))
        try:
            result = run(command, timeout=120, check=False)
        except RemoteError as exc:  # the run failed already; the next plan releases it
            ctx.log(f"could not release {step.dataset} now ({exc}); the next run will",
                    LogLine.Level.WARNING)
            continue
        if result.ok or commands.hold_not_there(result.stderr):
            records.note_held(link, f"{step.side.value}:{step.dataset}", add=False)


# ---- finish and prune ---------------------------------------------------------------------

def finish(ctx: StepContext) -> Next | Fail:
    link = _link(ctx)
    core = core_link(link)
    # Without an archive to tidy first, each host's inventory listing (and the
    # source's unit files' removal) rides in the round trip of its replication listing.
    bundled = not core.archive
    planned = [records.step_of(s) for s in ctx.state.get("steps", [])]
    trailing = planned[ctx.state.get("index", len(planned)):]
    batches = _batches(ctx, link, trailing)
    before = {side: command for side, _, _, command in batches}
    sides = _list_sides(ctx, link, core, _caps(ctx, "source_caps"), _caps(ctx, "target_caps"),
                        source_extra=(snapshot_commands.listing(), _units_removal(ctx))
                        if bundled else (),
                        target_extra=(snapshot_commands.listing(),) if bundled else (),
                        source_before=_only(before.get(Side.SOURCE)),
                        target_before=_only(before.get(Side.TARGET)))
    outputs = [(sides.source_before if side is Side.SOURCE else sides.target_before)[0]
               for side in before]
    return _close(ctx, link, core, trailing, batches, outputs, sides)


def _close(ctx: StepContext, link: ReplicationLink, core, trailing: list[Step],
           batches: list[tuple], outputs: list[str], sides: _Sides, *,
           units_left: bool = False) -> Next | Fail:
    """The steps after the last send judged (they ran ahead of the listings), then the
    run recorded in sync from the listings; `units_left`: the transfer's unit files
    were not removed (the next run's plan removes them)."""
    from apps.snapshots import inventory

    targets, bundled = core.targets(), not core.archive
    if trailing:
        failed = _judge_batch(ctx, link, trailing, batches, outputs)
        if failed is not None:
            _release_after_failure(ctx, link, trailing[failed[0] + 1:])
            return failed[1]
    ctx.state["index"] = len(ctx.state.get("steps", []))
    sources, on_target = sides.listed.sources, sides.on_target
    common = planner.newest_common_name(core.sources, targets, sources, on_target)
    received = newest_received({t: on_target[t].snapshots for t in targets.values()})
    now = timezone.now()
    transfer = {**ctx.state.get("transfer", {}), "action": ctx.state.get("plan_action"),
                "snapshot": ctx.state.get("sending"), "finished_at": now.isoformat()}
    if units_left:
        transfer["units"] = remote_jobs.unit_for(ctx, "send")
    ReplicationLink.objects.filter(pk=link.pk).update(
        state=ReplicationLink.State.IN_SYNC, last_error="", last_success_at=now,
        last_run_at=now, common_snapshot=common or "", last_transfer=transfer,
        newest_received=received.name if received else "",
        newest_received_at=received.created if received else None, updated_at=now)
    records.LINK_IN_SYNC.emit(records.subject(link), common_snapshot=common or "",
                      operation=ctx.operation.pk)
    if bundled:
        inventory.record_listed(ctx.host, ctx.runner(), sides.source_extra[0])
        inventory.record_listed(link.target_host, _on(link.target_host), sides.target_extra[0])
    else:
        ctx.runner()(_units_removal(ctx))
        carrying.forget_carried(ctx, link, core, sources, on_target, _on(link.target_host))
        inventory.refresh(ctx.host, ctx.runner())
        inventory.refresh(link.target_host, _on(link.target_host))
    if core.archive:
        carrying.record_carried(ctx, link, core, on_target)
    ctx.log(f"in sync: newest common snapshot @{common}" if common else
            "no snapshot is common to every dataset yet")
    return Next("prune", progress=95)


def prune(ctx: StepContext) -> Done:
    link = _link(ctx)
    result = pruning.prune_target(ctx, link, _on(link.target_host))
    return Done({**result, "action": ctx.state.get("plan_action"),
                 "snapshot": ctx.state.get("sending"),
                 "transfer": ctx.state.get("transfer")},
                message=f"{ctx.state.get('plan_action')}: in sync"
                        + (f", pruned {len(result['destroyed'])} on the target"
                           if result["destroyed"] else ""))


# ---- remove (a deleted link) --------------------------------------------------------------

def removal_state(link: ReplicationLink) -> dict:
    return {"link": link.name, "source_host": link.source_host_id,
            "target_host": link.target_host_id, "held": list(link.held),
            "work_dir": link.source_host.work_dir,
            "units": (link.last_transfer or {}).get("units", ""),
            "authorized_keys_file": link.target_host.authorized_keys_file}


def remove(ctx: StepContext) -> Done:
    """Remove the key line on the target (this operation's host), the key files on the
    source, and the holds the link may have left; a host that is gone is skipped."""
    name = ctx.state["link"]
    ctx.runner()(commands.remove_key(ctx.state["authorized_keys_file"], name, ctx.host.user))
    source = Host.objects.filter(pk=ctx.state["source_host"]).first()
    tag = f"pozol-link-{name}"
    for entry in ctx.state.get("held", []):
        side, _, snapshot = entry.partition(":")
        host = ctx.host if side == Side.TARGET else source
        if host is not None:
            _on(host)(cmd("zfs", "release", tag, snapshot_name(snapshot)), check=False)
    if source is not None:
        directory = commands.link_dir(ctx.state["work_dir"], name)
        units = ctx.state.get("units")  # the last run's transfer files, when it left them
        _on(source)(script("rm -rf -- {dir}" + (" {files}*" if units else ""), dir=directory,
                           files=f"{ctx.state['work_dir']}/{units}",
                           shown=f"remove {directory} on {source.name}"))
    return Done({"link": name}, message=f"link {name} removed from the hosts")


# ---- helpers ------------------------------------------------------------------------------

def _link(ctx: StepContext) -> ReplicationLink | None:
    return ReplicationLink.objects.select_related(
        "source_host", "target_host", "rollback_opted_in_by").filter(
        pk=ctx.state["link"]).first()


def _caps(ctx: StepContext, name: str) -> ReplicationCapabilities:
    return ReplicationCapabilities(**ctx.state[name])


def _on(host: Host):
    from apps.remote import ssh

    return ssh.session(host.ssh_target(), connect_timeout=settings.POZOL["SSH_CONNECT_TIMEOUT"])


def _size(n: int | None) -> str:
    from apps.common.formatting import human_bytes

    return human_bytes(n) if n is not None else "?"


def _recorded(step):
    """The step, with a host that cannot be reached (or a command that fails) written on
    the link too: the operation fails either way, and the link must not keep showing
    its last good state as if nothing happened."""

    def run(ctx: StepContext):
        try:
            return step(ctx)
        except RemoteError as exc:
            link = ReplicationLink.objects.filter(pk=ctx.state.get("link")).first()
            if link is not None:
                records.record_outcome(link, ReplicationLink.State.FAILED, str(exc))
            raise

    run.__name__ = step.__name__
    return run


RUN = register(Kind(name="replication.run",
                    steps={name: _recorded(step) for name, step in (
                        ("plan", plan), ("execute", execute),
                        ("finish", finish), ("prune", prune))},
                    first_step="plan", mutating=False, deadline=timedelta(hours=24)))
REMOVE = register(Kind(name="replication.remove", steps={"remove": remove},
                       first_step="remove", mutating=False, deadline=timedelta(minutes=30)))

