"""Replication's operation kinds: run a link, and remove what a deleted link left.

`replication.run` (on the source host), as zrepl's loop does:
  plan     the link's key pair exists, its receive-only line is in the target's
           authorized_keys and its private key and the target's pinned host key
           are in the source's work dir (again after anything but a clean
           run, or when the archive it carries changed); the source cluster's
           WAL archive, while PoZoL archives it, is snapshotted and listed
           (apps.wal.core.commands.carry); both sides listed and planned by the
           pure planner; refused, busy or in sync ends here
  execute  the plan's steps in order, the quick ones back to back (holds and the
           like in one batch per side); a SEND runs detached on the source
           (`op<id>-send<i>`), so a worker that dies does not stop it, and each
           call starts it if missing, waits on the host up to a few seconds and
           reads where it stands in one round trip (detached.follow)
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
listing and the pool's room in plan; the holds (one `zfs hold` of every snapshot)
before a send; the releases, the listing, the inventory's listing and the unit
files' removal in finish (apps.replication.core.bundles), in that order on each host.

What a run holds is recorded on the link (`held`) as it holds it (a batch's holds
before it runs), so a run killed mid-transfer leaves a record the next plan releases.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.common import events
from apps.fleet import credentials, reserves
from apps.fleet.core import room
from apps.fleet.models import Host
from apps.ops import remote_jobs
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, Wait, register
from apps.ops.models import LogLine
from apps.remote import keys
from apps.remote.commands import Command, cmd, script, snapshot_name
from apps.remote.errors import RemoteError
from apps.remote.facts.zfs import ZfsVersion
from apps.remote.together import concurrently
from apps.replication import carrying, pruning
from apps.replication.core import bundles, commands, listing, progress
from apps.replication.core.capabilities import ReplicationCapabilities, replication_capabilities
from apps.replication.core.lag import newest_received
from apps.replication.core.planner import (
    Action,
    Send,
    Side,
    Step,
    StepKind,
    ordered,
    plan_link,
)
from apps.replication.link_rows import core_link
from apps.replication.models import ReplicationLink
from apps.snapshots.core import commands as snapshot_commands
from apps.wal.models import WalArchive

WAIT_SECONDS = 3.0  # a step waits this long on the host for a transfer to end
TAIL = 600


class LinkFailure(RemoteError):
    """A run cannot go on for a reason a person must fix (it fails the operation)."""

    code = "replication_failed"


# ---- key ----------------------------------------------------------------------------------

def _key_commands(link: ReplicationLink) -> dict[Side, Command] | Fail:
    """The link's key pair made if it has none; the commands that put its receive-only
    line in the target's authorized_keys and its private key and the target's pinned
    host key in the source's work dir (run ahead of the plan's listings, in their
    round trips). Not run after a clean run: a key that stopped working fails the next
    transfer, and the run after that installs it again."""
    if not link.private_key_encrypted:
        private, public = keys.generate_keypair(commands.key_comment(link.name))
        link.private_key_encrypted = credentials.encrypt(private)
        link.public_key = public
        link.save(update_fields=["private_key_encrypted", "public_key", "updated_at"])
    target = link.target_host
    if not target.host_key:
        _record_outcome(link, ReplicationLink.State.FAILED,
                        f"{target.name}'s host key is not pinned yet")
        return Fail(f"{target.name}'s host key is not pinned yet: discover it first",
                    code="target_not_pinned")
    line = commands.authorized_keys_line(core_link(link), link.public_key,
                                         capabilities_of(target), login=target.user)
    known = commands.known_hosts_line(target.address, target.port, target.host_key)
    files = commands.write_source_files(_endpoint(link), known,
                                        credentials.decrypt(link.private_key_encrypted))
    install = commands.install_key(target.authorized_keys_file, core_link(link), line)
    return {Side.SOURCE: files, Side.TARGET: install}


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
        key = _key_commands(link)  # again after anything but a clean run
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
    source_caps, target_caps, chosen, sources, rooms = _plan(ctx, link, core, key)
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
    if chosen.action in (Action.REFUSED, Action.BUSY) and ctx.state.get("carry"):
        carrying.drop_carry(ctx, core)
    if chosen.action is Action.REFUSED:
        reasons = "; ".join(chosen.reasons())
        _record_outcome(link, ReplicationLink.State.REFUSED, reasons)
        return Fail(f"refused: {reasons}", code="refused")
    if chosen.action is Action.BUSY:
        _record_outcome(link, ReplicationLink.State.BUSY,
                        "; ".join(d.reason for d in chosen.datasets if d.action is Action.BUSY))
        return Done({"action": chosen.action.value}, message="target busy: nothing done")
    ctx.state["steps"] = [_step_dict(s) for s in chosen.steps]
    ctx.state["index"] = 0
    ctx.state["sending"] = chosen.sending
    ctx.state["source_caps"] = asdict(source_caps)
    ctx.state["target_caps"] = asdict(target_caps)
    ctx.state["transfer"] = {"bytes": 0, "seconds": 0.0}
    ctx.state["expected"] = _estimates(chosen.steps, sources)
    refused = _room(ctx, link, chosen.steps, rooms)
    if refused is not None:
        return refused
    if link.resume_failed:
        ReplicationLink.objects.filter(pk=link.pk).update(resume_failed=False)
    return Next("execute", message=f"{chosen.action.value}: {len(chosen.steps)} steps",
                progress=10)


def _list_sides(ctx: StepContext, link: ReplicationLink, core,
                source_caps: ReplicationCapabilities, target_caps: ReplicationCapabilities,
                source_extra: tuple[Command, ...] = (),
                target_extra: tuple[Command, ...] = (),
                source_before: Command | None = None,
                target_before: Command | None = None) -> _Sides:
    """Both sides at once, one round trip each: the source's listing (with its tools)
    and the target's states keyed by target dataset (the carried archive's among
    them); `*_extra`, more commands run after each side's listing in the same round
    trip (each must succeed), their outputs returned in order; `*_before`, a batch
    run ahead of the listing, its output returned first among them."""
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


def _parts(text: str, extra: tuple, before: Command | None) -> tuple[str | None, list[str]]:
    """The output of `before` (None without it), and the listing's and the extras'."""
    found = bundles.parts(text, 1 + len(extra) + (before is not None))
    return (found[0], found[1:]) if before is not None else (None, found)


@dataclass(frozen=True)
class _Sides:
    listed: listing.SideListing  # the source's
    on_target: dict  # target dataset -> TargetState
    source_extra: tuple[str, ...] = ()
    target_extra: tuple[str, ...] = ()
    source_before: str | None = None
    target_before: str | None = None


def _chain(command: Command, extra: tuple[Command, ...],
           before: Command | None = None) -> Command:
    every = ((before,) if before is not None else ()) + (command, *extra)
    if len(every) == 1:
        return command
    return bundles.chained(*every, shown=", ".join(c.redacted() for c in every))


def _target_pools(core) -> tuple[str, ...]:
    return tuple(sorted({dataset.split("/")[0] for dataset in core.receiving()}))


def _plan(ctx: StepContext, link: ReplicationLink, core, key: dict[Side, Command]) -> tuple:
    source_caps = capabilities_of(link.source_host)
    target_caps = capabilities_of(link.target_host)
    pools = _target_pools(core)
    # The pools' room, read with the listing: the check before any hold or send
    # costs no round trip of its own (a pool it cannot read is read again then).
    sides = _list_sides(ctx, link, core, source_caps, target_caps, target_extra=tuple(
        script("{read} 2>/dev/null || :", read=room.read_command(pool),
               shown=f"{pool}'s used and available") for pool in pools),
        source_before=key.get(Side.SOURCE), target_before=key.get(Side.TARGET))
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

def execute(ctx: StepContext) -> Next | Wait | Fail:
    link = _link(ctx)
    if link is None:
        return Fail("the link was deleted", code="link_gone")
    planned = [_step_of(s) for s in ctx.state["steps"]]
    index = ctx.state["index"]
    if index >= len(planned):
        return Next("finish", progress=90)
    step = planned[index]
    if step.kind is StepKind.SEND:
        outcome = _send(ctx, link, step, index, len(planned))
        if outcome is not None:
            return outcome
        index += 1
        if all(s.kind in BATCHED for s in planned[index:]):
            # The releases and properties after the last send run in finish's round
            # trips, ahead of its listings (which must see them done).
            ctx.state["index"] = index
            return Next("finish", message=step.text[:300], progress=90)
    # The steps up to the next send run back to back, rather than one delivery per
    # step; holds, releases and the like in one round trip per side, both sides at
    # once (_run_batch). Each is safe to repeat if the worker dies among them and
    # the step runs again from the saved index.
    while index < len(planned) and planned[index].kind is not StepKind.SEND:
        end = _batch_end(planned, index)
        failed = _run_batch(ctx, link, planned[index:end]) if end > index + 1 else (
            _first_failure(_run_step(ctx, link, planned[index])))
        step = planned[end - 1]
        if failed is not None:
            position, failure = failed
            _release_after_failure(ctx, link, planned[index + position + 1:])
            return failure
        index = end
    ctx.state["index"] = index
    if index >= len(planned):  # no delivery more just to find nothing left to do
        return Next("finish", message=step.text[:300], progress=90)
    # The next step is a send: started now rather than after another delivery. A
    # worker that dies here runs this step again from the saved index: the quick
    # steps again (each safe to repeat), then the send (its unit never twice).
    ctx.progress(10 + int(80 * index / len(planned)), step.text[:300])
    return execute(ctx)


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


def _batches(ctx: StepContext, link: ReplicationLink, steps: list[Step]) -> list[tuple]:
    """(side, runner, [(position, step)], batch command) per side that has steps. Holds are
    recorded before they are taken: a worker that dies meanwhile leaves a record the
    next plan releases (a release of a hold that is not there is harmless)."""
    for step in steps:
        if step.kind is StepKind.HOLD:
            _note_held(link, f"{step.side.value}:{step.dataset}", add=True)
    found = []
    for side in Side:
        items = [(i, s) for i, s in enumerate(steps) if s.side is side]
        if not items:
            continue
        run = ctx.runner() if side is Side.SOURCE else _on(link.target_host)
        parts = [_step_command(ctx, link, step) for _, step in items]
        together = _together([step for _, step in items], core_link(link).hold_tag)
        found.append((side, run, items, bundles.batch(
            parts, shown=together.redacted() if together else "; ".join(
                c.redacted() for c in parts), together=together)))
    return found


def _together(steps: list[Step], tag: str) -> Command | None:
    """One `zfs hold` (or `zfs release`) of every snapshot when the side's steps are
    all holds (or all releases): ZFS waits for one transaction group, not one per
    snapshot. A side with one step, or with steps of other kinds, has none."""
    for kinds, verb in (({StepKind.HOLD}, "hold"),
                        ({StepKind.RELEASE, StepKind.RELEASE_STALE}, "release")):
        if len(steps) > 1 and all(step.kind in kinds for step in steps):
            return cmd("zfs", verb, tag, *(snapshot_name(step.dataset) for step in steps))
    return None


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
            _note_held(link, f"{step.side.value}:{step.dataset}", add=False)
        if failure is not None and first is None:
            first = (i, failure)
    return first


def _first_failure(failure: Fail | None) -> tuple[int, Fail] | None:
    return None if failure is None else (0, failure)


def _step_command(ctx: StepContext, link: ReplicationLink, step: Step) -> Command:
    return commands.step_command(step, core_link(link), _endpoint(link),
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
            _note_held(link, f"{step.side.value}:{step.dataset}", add=True)
            return None
    elif step.kind in (StepKind.RELEASE, StepKind.RELEASE_STALE):
        if ok or commands.hold_not_there(stderr) or "dataset does not exist" in stderr:
            _note_held(link, f"{step.side.value}:{step.dataset}", add=False)
            return None
    elif ok or (step.kind is StepKind.DISCARD_PARTIAL
                and "resumable receive state" in stderr):
        return None  # a discard run again finds nothing left to discard
    why = (stderr or stdout).strip()[-TAIL:]
    _record_outcome(link, ReplicationLink.State.FAILED, f"{step.text}: {why}")
    return Fail(f"{step.text} failed: {why}", code=f"{step.kind.value}_failed")


def _send(ctx: StepContext, link: ReplicationLink, step: Step, index: int,
          total: int) -> Wait | Fail | None:
    """None when the transfer is done; Wait while it runs; Fail when it failed."""
    assert step.send is not None
    name = f"send{index}"
    if name not in ctx.state.setdefault("started", {}):
        _note_large_blocks(link, step.send)
        if not (ctx.state["expected"].get(name) or {}).get("exact"):  # none at the plan
            exact = _exact_size(ctx, step.send)
            if exact is not None:
                ctx.state["expected"][name] = exact
        ctx.state["started"][name] = time.time()
    expected = ctx.state["expected"].get(name)
    command = commands.pipeline(step.send, _endpoint(link), _caps(ctx, "source_caps"),
                                link.bandwidth_limit)
    status, err = remote_jobs.follow(ctx, name, command, WAIT_SECONDS)
    sent = progress.parse_counter(err) or 0
    if status.state == "running":
        shown = progress.Progress(sent, _expected_of(expected))
        fraction = shown.fraction
        label = f"{_size(sent)} of {_size(expected['bytes'])} {expected['label']}" if expected \
            else f"{_size(sent)} sent"
        share = 80 / total
        ctx.progress(10 + int(share * index + share * (fraction or 0)),
                     f"{step.text}: {label}")
        return Wait(0)
    seconds = time.time() - ctx.state["started"].get(name, time.time())
    failed = status.state != "succeeded" or commands.send_failed(err)
    if failed:
        why = progress.pipeline_messages(err, TAIL) or f"the transfer unit ended {status.state}"
        if step.send.resume_token:
            ReplicationLink.objects.filter(pk=link.pk).update(resume_failed=True)
        _record_outcome(link, ReplicationLink.State.FAILED, f"{step.text}: {why}")
        _release_after_failure(ctx, link, [_step_of(s) for s in ctx.state["steps"][index + 1:]])
        return Fail(f"{step.text} failed (exit {status.exit_code}): {why}",
                    code="transfer_failed")
    transfer = ctx.state["transfer"]
    transfer["bytes"] += sent
    transfer["seconds"] += seconds
    ctx.log(f"{step.text}: {_size(sent)} in {seconds:.1f} s"
            + (f" ({_size(int(sent / seconds))}/s)" if seconds > 0 else ""))
    return None


def _note_large_blocks(link: ReplicationLink, send: Send) -> None:
    """The -L of the link's first send is kept by every later one (streams.py): written
    before that send starts, so a send cut short still counts. A resume carries its
    flags in its token; a raw send implies -L whatever the link says."""
    if send.resume_token or send.raw or link.large_blocks_sent is not None:
        return
    ReplicationLink.objects.filter(pk=link.pk, large_blocks_sent=None).update(
        large_blocks_sent=send.large_blocks)


def _room(ctx: StepContext, link: ReplicationLink, steps: tuple[Step, ...],
          rooms: dict[str, str]) -> Fail | None:
    """Refused, before anything is held or sent, when the run's receives would take a
    target pool below its reserve (apps.fleet.core.room), its free space read on the
    target now. The sizes are `zfs send -nvP`'s where the source has it (OpenZFS), else
    the listing's estimate (zfs-fuse has no -n: progress.estimate_from_listing)."""
    for index, step in enumerate(steps):
        exact = _exact_size(ctx, step.send) if step.send is not None else None
        if exact is not None:
            ctx.state["expected"][f"send{index}"] = exact
    sizes = progress.receive_sizes([step.send for step in steps], ctx.state["expected"])
    run = _on(link.target_host)
    for pool, size in sizes.items():
        try:
            shortage = reserves.refusal_in_text(link.target_host, pool, rooms.get(pool, ""),
                                                size, "this run's receive")
        except ValueError:  # not read with the listing: read it now
            shortage = reserves.refusal_on_host(run, link.target_host, pool, size,
                                                "this run's receive")
        if shortage:
            _record_outcome(link, ReplicationLink.State.REFUSED, shortage.message)
            return Fail(f"refused: {shortage.message}", code="no_room")
    return None


def _exact_size(ctx: StepContext, send: Send) -> dict | None:
    """`zfs send -nvP` where the source has it; elsewhere the plan's estimate stands."""
    if not _caps(ctx, "source_caps").send_estimate or send.resume_token:
        return None
    result = ctx.runner()(commands.estimate_command(send), timeout=300, check=False)
    size = progress.parse_send_estimate(result.stdout) if result.ok else None
    return {"bytes": size, "exact": True, "label": "expected"} if size is not None else None


def _estimates(steps: tuple[Step, ...], sources: dict) -> dict[str, dict]:
    """The size of each send from the plan's own listing (used/referenced), labelled an
    estimate; sends whose snapshots it cannot size are left out."""
    found = {}
    for index, step in enumerate(steps):
        send = step.send
        if send is None or send.snapshot is None:
            continue
        to = send.snapshot.partition("@")[2]
        from_ = send.from_snapshot.partition("@")[2] if send.from_snapshot else None
        estimate = progress.estimate_from_listing(sources[send.source].snapshots, to, from_)
        if estimate is not None:
            found[f"send{index}"] = {"bytes": estimate.bytes, "exact": False,
                                     "label": estimate.label}
    return found


def _expected_of(expected: dict | None) -> progress.Expected | None:
    return progress.Expected(expected["bytes"], expected["exact"]) if expected else None


def _units_removal(ctx: StepContext) -> Command:
    """The finished transfers' unit files, all in one command."""
    prefix = remote_jobs.unit_for(ctx, "send")
    return script("cd {dir} 2>/dev/null && rm -f -- {prefix}*", dir=ctx.host.work_dir,
                  prefix=prefix, shown=f"remove the files of units {prefix}*")


def _release_after_failure(ctx: StepContext, link: ReplicationLink, rest: list[Step]) -> None:
    """Release the holds of a failed run now; what cannot be released stays in `held`
    for the next run's plan."""
    for step in rest:
        if step.kind is not StepKind.RELEASE:
            continue
        run = ctx.runner() if step.side is Side.SOURCE else _on(link.target_host)
        command = commands.step_command(step, core_link(link), _endpoint(link),
                                        _caps(ctx, "source_caps"))
        try:
            result = run(command, timeout=120, check=False)
        except RemoteError as exc:  # the run failed already; the next plan releases it
            ctx.log(f"could not release {step.dataset} now ({exc}); the next run will",
                    LogLine.Level.WARNING)
            continue
        if result.ok or commands.hold_not_there(result.stderr):
            _note_held(link, f"{step.side.value}:{step.dataset}", add=False)


# ---- finish and prune ---------------------------------------------------------------------

def finish(ctx: StepContext) -> Next | Fail:
    from apps.snapshots import inventory

    link = _link(ctx)
    core = core_link(link)
    targets = core.targets()
    # Without an archive to tidy first, each host's inventory listing (and the
    # source's unit files' removal) rides in the round trip of its replication listing.
    bundled = not core.archive
    planned = [_step_of(s) for s in ctx.state.get("steps", [])]
    trailing = planned[ctx.state.get("index", len(planned)):]
    batches = _batches(ctx, link, trailing)
    before = {side: command for side, _, _, command in batches}
    sides = _list_sides(ctx, link, core, _caps(ctx, "source_caps"), _caps(ctx, "target_caps"),
                        source_extra=(snapshot_commands.listing(), _units_removal(ctx))
                        if bundled else (),
                        target_extra=(snapshot_commands.listing(),) if bundled else (),
                        source_before=before.get(Side.SOURCE),
                        target_before=before.get(Side.TARGET))
    if trailing:
        outputs = [sides.source_before if side is Side.SOURCE else sides.target_before
                   for side in before]
        failed = _judge_batch(ctx, link, trailing, batches, outputs)
        if failed is not None:
            _release_after_failure(ctx, link, trailing[failed[0] + 1:])
            return failed[1]
        ctx.state["index"] = len(planned)
    sources, on_target = sides.listed.sources, sides.on_target
    common = _common_name(core.sources, targets, sources, on_target)
    received = newest_received({t: on_target[t].snapshots for t in targets.values()})
    now = timezone.now()
    transfer = {**ctx.state.get("transfer", {}), "action": ctx.state.get("plan_action"),
                "snapshot": ctx.state.get("sending"), "finished_at": now.isoformat()}
    ReplicationLink.objects.filter(pk=link.pk).update(
        state=ReplicationLink.State.IN_SYNC, last_error="", last_success_at=now,
        last_run_at=now, common_snapshot=common or "", last_transfer=transfer,
        newest_received=received.name if received else "",
        newest_received_at=received.created if received else None, updated_at=now)
    LINK_IN_SYNC.emit(_subject(link), common_snapshot=common or "",
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


def _common_name(sources: tuple[str, ...], targets: dict[str, str], source_states: dict,
                 target_states: dict) -> str | None:
    """The newest snapshot name common (by guid) to every source and its target."""
    names: set[str] | None = None
    order: list[str] = []
    for source in sources:
        mine = {s.guid: s.name for s in source_states[source].snapshots}
        theirs = ordered(target_states[targets[source]].snapshots)
        common = [mine[s.guid] for s in theirs if s.guid in mine]
        names = set(common) if names is None else names & set(common)
        order = common
    kept = [name for name in order if names and name in names]
    return kept[-1] if kept else None


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
            "authorized_keys_file": link.target_host.authorized_keys_file}


def remove(ctx: StepContext) -> Done:
    """Remove the key line on the target (this operation's host), the key files on the
    source, and the holds the link may have left; a host that is gone is skipped."""
    name = ctx.state["link"]
    ctx.runner()(commands.remove_key(ctx.state["authorized_keys_file"], name))
    source = Host.objects.filter(pk=ctx.state["source_host"]).first()
    tag = f"pozol-link-{name}"
    for entry in ctx.state.get("held", []):
        side, _, snapshot = entry.partition(":")
        host = ctx.host if side == Side.TARGET else source
        if host is not None:
            _on(host)(cmd("zfs", "release", tag, snapshot_name(snapshot)), check=False)
    if source is not None:
        directory = commands.link_dir(ctx.state["work_dir"], name)
        _on(source)(script("rm -rf -- {dir}", dir=directory,
                           shown=f"remove {directory} on {source.name}"))
    return Done({"link": name}, message=f"link {name} removed from the hosts")


# ---- helpers ------------------------------------------------------------------------------

def _link(ctx: StepContext) -> ReplicationLink | None:
    return ReplicationLink.objects.select_related(
        "source_host", "target_host", "rollback_opted_in_by").filter(
        pk=ctx.state["link"]).first()


def capabilities_of(host: Host) -> ReplicationCapabilities:
    facts = host.typed_facts()
    if facts is None or facts.zfs is None:
        raise LinkFailure(f"{host.name} has no ZFS facts: run discovery")
    version = ZfsVersion(userland=facts.zfs.userland_version, kernel=facts.zfs.kernel_version)
    return replication_capabilities(facts.zfs.dialect, version, facts.zfs.capabilities)


def _caps(ctx: StepContext, name: str) -> ReplicationCapabilities:
    return ReplicationCapabilities(**ctx.state[name])


def _on(host: Host):
    from apps.remote import ssh

    return ssh.session(host.ssh_target(), connect_timeout=settings.POZOL["SSH_CONNECT_TIMEOUT"])


def _endpoint(link: ReplicationLink) -> commands.Endpoint:
    directory = commands.link_dir(link.source_host.work_dir, link.name)
    target = link.target_host
    return commands.Endpoint(host=target.address, key_path=f"{directory}/id",
                             known_hosts_path=f"{directory}/known_hosts", user=target.user,
                             port=target.port)


def _note_held(link: ReplicationLink, entry: str, *, add: bool) -> None:
    from django.db import transaction

    with transaction.atomic():
        row = ReplicationLink.objects.select_for_update().get(pk=link.pk)
        held = [h for h in row.held if h != entry] + ([entry] if add else [])
        ReplicationLink.objects.filter(pk=link.pk).update(held=held)


def _record_outcome(link: ReplicationLink, state: str, error: str) -> None:
    now = timezone.now()
    ReplicationLink.objects.filter(pk=link.pk).update(state=state, last_error=error[:4000],
                                                      last_run_at=now, updated_at=now)
    if state == ReplicationLink.State.FAILED:
        LINK_FAILED.emit(_subject(link), error=error[-1000:])


def _subject(link: ReplicationLink) -> dict:
    return {"type": "replication_link", "id": link.pk, "name": link.name}


# Automation hears of these (apps/events); the registry is apps/common/events.py.
LINK_IN_SYNC = events.register(events.EventKind("link.in_sync",
                                                "A replication link ran and is in sync"))
LINK_FAILED = events.register(events.EventKind("link.failed", "A replication run failed"))


def _step_dict(step: Step) -> dict:
    return {"kind": step.kind.value, "side": step.side.value, "dataset": step.dataset,
            "text": step.text, "destroys": list(step.destroys),
            "send": asdict(step.send) if step.send else None}


def _step_of(values: dict) -> Step:
    send = Send(**values["send"]) if values.get("send") else None
    return Step(StepKind(values["kind"]), Side(values["side"]), values["dataset"],
                values["text"], send, tuple(values.get("destroys", ())))




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
                _record_outcome(link, ReplicationLink.State.FAILED, str(exc))
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

