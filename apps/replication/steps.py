"""Replication's operation kinds: run a link, and remove what a deleted link left.

`replication.run` (on the source host), as zrepl's loop does:
  plan     the link's key pair exists, its receive-only line is in the target's
           authorized_keys and its private key and the target's pinned host key
           are in the source's work dir (again after anything but a clean
           run, or when the archive it carries changed); the source cluster's
           WAL archive, while PoZoL archives it, is snapshotted and listed
           (apps.wal.core.commands.carry); both sides listed (one command per
           host) and planned by the pure planner; refused, busy or in sync
           ends here
  execute  the plan's steps in order, the quick ones back to back; a SEND runs
           detached on the source (`op<id>-send<i>`), so a worker that dies
           does not stop it, and each call starts it if missing, waits on the
           host up to a few seconds and reads where it stands in one round
           trip (detached.follow)
  finish   both inventories refreshed, the newest common snapshot and the
           newest received recorded (lag counts from it); a carried archive's
           received snapshot, its listing and the target's window recorded
           (apps.wal.copies), and the link's older archive snapshots destroyed
           on both sides (each pins WAL the source's retention removed)
  prune    the target's keep rules (the link's counts, each received
           snapshot's policy identity), sparing the newest common snapshot

What a run holds is recorded on the link (`held`) as it holds it, so a run
killed mid-transfer leaves a record the next plan releases.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.common import events
from apps.fleet import credentials, reserves
from apps.fleet.models import Host
from apps.ops import remote_jobs
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, Wait, register
from apps.ops.models import LogLine
from apps.remote import keys
from apps.remote.commands import cmd, script, snapshot_name
from apps.remote.errors import RemoteError
from apps.remote.facts.zfs import ZfsVersion
from apps.replication import pruning, readers
from apps.replication.core import commands, listing, progress
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
from apps.wal import copies, recorded
from apps.wal.core import commands as wal_commands
from apps.wal.core.window import describe
from apps.wal.models import WalArchive

WAIT_SECONDS = 3.0  # a step waits this long on the host for a transfer to end
TAIL = 600


class LinkFailure(RemoteError):
    """A run cannot go on for a reason a person must fix (it fails the operation)."""

    code = "replication_failed"


# ---- key ----------------------------------------------------------------------------------

def _install_key(ctx: StepContext, link: ReplicationLink) -> Fail | None:
    """The link's key pair exists; its receive-only line is in the target's
    authorized_keys and its private key and the target's pinned host key are in the
    source's work dir. Skipped after a clean run: a key that stopped working fails the
    next transfer, and the run after that installs it again."""
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
    _on(target)(commands.install_key(target.authorized_keys_file, core_link(link), line))
    known = commands.known_hosts_line(target.address, target.port, target.host_key)
    ctx.runner()(commands.write_source_files(
        _endpoint(link), known, credentials.decrypt(link.private_key_encrypted)))
    ReplicationLink.objects.filter(pk=link.pk).update(key_installed_at=timezone.now())
    return None


# ---- plan ---------------------------------------------------------------------------------

def plan(ctx: StepContext) -> Next | Done | Fail:
    link = _link(ctx)
    if link is None:
        return Fail("the link was deleted", code="link_gone")
    carried = _carried(link)
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
    if not (link.key_installed_at and link.state == ReplicationLink.State.IN_SYNC):
        failure = _install_key(ctx, link)  # again after anything but a clean run
        if failure is not None:
            return failure
    core = core_link(link)
    if core.archive:
        carried = WalArchive.objects.filter(cluster__host=link.source_host,
                                            dataset=core.archive).select_related("cluster")
        archive = carried.first()
        if archive is None:
            return Fail(f"archiving of {core.archive} was turned off while this run "
                        "started: run it again", code="refused")
        _snapshot_archive(ctx, core, archive)
    source_caps, target_caps, chosen, sources = _plan(ctx, link, core)
    ctx.state["plan_action"] = chosen.action.value
    for dataset in chosen.datasets:
        ctx.log(f"{dataset.source} -> {dataset.target}: {dataset.action.value}: "
                f"{dataset.reason}")
        if dataset.stream is not None and any(s.send for s in dataset.steps):
            ctx.log(f"{dataset.source}: zfs send {dataset.stream.text}")
    for note in chosen.notes + tuple(n for d in chosen.datasets for n in d.notes):
        ctx.log(f"note: {note}")
    if chosen.action in (Action.REFUSED, Action.BUSY) and ctx.state.get("carry"):
        _drop_carry(ctx, core)
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
    refused = _room(ctx, link, chosen.steps)
    if refused is not None:
        return refused
    if link.resume_failed:
        ReplicationLink.objects.filter(pk=link.pk).update(resume_failed=False)
    return Next("execute", message=f"{chosen.action.value}: {len(chosen.steps)} steps",
                progress=10)


def _carried(link: ReplicationLink) -> str:
    """The source cluster's WAL archive while PoZoL archives it (apps/wal), else ""."""
    if not link.cluster_data_dir:
        return ""
    archive = WalArchive.objects.filter(
        cluster__host=link.source_host, cluster__data_dir=link.cluster_data_dir,
        state=WalArchive.State.ON).exclude(directory="").first()
    return archive.dataset if archive is not None else ""


def _snapshot_archive(ctx: StepContext, core, archive: WalArchive) -> None:
    """Snapshot the carried archive and keep what the snapshot holds for `finish`. A
    repeated step takes another (a second later): its own listing is the one kept."""
    label = core.archive_label(timezone.now().strftime("%Y%m%dT%H%M%S"))
    out = ctx.runner()(wal_commands.carry(archive.cluster.target(), core.archive, label),
                       timeout=300).stdout
    carried = wal_commands.parse_carried(out)
    ctx.state["carry"] = {"label": label, "listing": recorded.stored_listing(
        carried.timeline, carried.segments, carried.last_transaction)
        if carried.timeline is not None else {}}
    ctx.log(f"{core.archive}@{label} holds {len(carried.segments)} archived segments")


def _drop_carry(ctx: StepContext, core) -> None:
    """A run that sends nothing leaves no archive snapshot behind (each would pin WAL
    the source's retention removes, run after refused run)."""
    name = f"{core.archive}@{ctx.state['carry']['label']}"
    result = ctx.runner()(cmd("zfs", "destroy", snapshot_name(name)), timeout=120, check=False)
    if not result.ok:
        ctx.log(f"kept {name}: {result.stderr.strip()[-300:]}", LogLine.Level.WARNING)


def _archive_floor(core, sources: dict) -> float | None:
    """The oldest snapshot name of the cluster on every source dataset: its time."""
    names = set.intersection(*({s.name for s in sources[d].snapshots} for d in core.sources))
    times = [s.created.timestamp() for s in sources[core.sources[0]].snapshots
             if s.name in names]
    return min(times) if times else None


def _list_sides(ctx: StepContext, link: ReplicationLink, core,
                source_caps: ReplicationCapabilities, target_caps: ReplicationCapabilities):
    """Both sides, one command each: the source's listing (with its tools) and the
    target's states keyed by target dataset (the carried archive's among them)."""
    datasets = core.sources + ((core.archive,) if core.archive else ())
    receiving = core.receiving()
    source_text = ctx.runner()(listing.source_command(datasets, source_caps),
                               timeout=300).stdout
    target_text = _on(link.target_host)(
        listing.target_command(receiving, target_caps), timeout=300).stdout
    return (listing.parse_source(source_text, datasets),
            listing.parse_target(target_text, receiving).targets)


def _plan(ctx: StepContext, link: ReplicationLink, core) -> tuple:
    source_caps = capabilities_of(link.source_host)
    target_caps = capabilities_of(link.target_host)
    sources, on_target = _list_sides(ctx, link, core, source_caps, target_caps)
    source_caps = replace(source_caps, pv="pv" in sources.tools,
                          mbuffer="mbuffer" in sources.tools)
    _note_encryption(link, sources.sources)
    target_states = {source: on_target[target] for source, target in core.targets().items()}
    if core.archive:
        target_states[core.archive] = on_target[core.archive_target]
        ctx.state.setdefault("carry", {})["floor"] = _archive_floor(core, sources.sources)
    chosen = plan_link(core, sources.sources, target_states, source_caps, target_caps,
                       held=link.held, resume_failed=link.resume_failed)
    return source_caps, target_caps, chosen, sources.sources


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
    # Holds, releases and the like take a round trip each: run them back to back up
    # to the next send, rather than one delivery per step. Each is safe to repeat
    # if the worker dies among them and the step runs again from the saved index.
    while index < len(planned) and planned[index].kind is not StepKind.SEND:
        step = planned[index]
        failure = _run_step(ctx, link, step)
        if failure is not None:
            _release_after_failure(ctx, link, planned[index + 1:])
            return failure
        index += 1
    ctx.state["index"] = index
    return Next("execute", message=step.text[:300],
                progress=10 + int(80 * index / len(planned)))


def _run_step(ctx: StepContext, link: ReplicationLink, step: Step) -> Fail | None:
    run = ctx.runner() if step.side is Side.SOURCE else _on(link.target_host)
    command = commands.step_command(step, core_link(link), _endpoint(link),
                                    _caps(ctx, "source_caps"))
    if step.kind is StepKind.ROLLBACK:
        who = link.rollback_opted_in_by or "an operator"
        when = link.rollback_opted_in_at.isoformat() if link.rollback_opted_in_at else "?"
        ctx.log(f"rolling back {step.dataset} (opted in by {who} at {when}): {step.text}",
                LogLine.Level.WARNING)
    result = run(command, timeout=600, check=False)
    if step.kind is StepKind.HOLD:
        if result.ok or commands.hold_already_there(result.stderr):
            _note_held(link, f"{step.side.value}:{step.dataset}", add=True)
            return None
    elif step.kind in (StepKind.RELEASE, StepKind.RELEASE_STALE):
        if result.ok or commands.hold_not_there(result.stderr) or "dataset does not exist" in (
                result.stderr):
            _note_held(link, f"{step.side.value}:{step.dataset}", add=False)
            return None
    elif result.ok or (step.kind is StepKind.DISCARD_PARTIAL
                       and "resumable receive state" in result.stderr):
        return None  # a discard run again finds nothing left to discard
    why = (result.stderr or result.stdout).strip()[-TAIL:]
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


def _room(ctx: StepContext, link: ReplicationLink, steps: tuple[Step, ...]) -> Fail | None:
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


def _forget_units(ctx: StepContext) -> None:
    """The finished transfers' unit files, all in one command."""
    prefix = remote_jobs.unit_for(ctx, "send")
    ctx.runner()(script("cd {dir} 2>/dev/null && rm -f -- {prefix}*", dir=ctx.host.work_dir,
                        prefix=prefix, shown=f"remove the files of units {prefix}*"))


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

def finish(ctx: StepContext) -> Next:
    from apps.snapshots import inventory

    link = _link(ctx)
    core = core_link(link)
    targets = core.targets()
    listed, on_target = _list_sides(ctx, link, core, _caps(ctx, "source_caps"),
                                    _caps(ctx, "target_caps"))
    sources = listed.sources
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
    _forget_units(ctx)
    if core.archive:
        _forget_carried(ctx, link, core, sources, on_target)
    inventory.refresh(ctx.host, ctx.runner())
    inventory.refresh(link.target_host, _on(link.target_host))
    if core.archive:
        _record_carried(ctx, link, core, on_target)
    ctx.log(f"in sync: newest common snapshot @{common}" if common else
            "no snapshot is common to every dataset yet")
    return Next("prune", progress=95)


def _received_carry(ctx: StepContext, core, on_target: dict) -> str | None:
    """The archive snapshot this run took, if the target holds it now."""
    label = (ctx.state.get("carry") or {}).get("label")
    held = {s.name for s in on_target[core.archive_target].snapshots}
    return label if label in held else None


def _forget_carried(ctx: StepContext, link: ReplicationLink, core, sources: dict,
                    on_target: dict) -> None:
    """Destroy the link's older snapshots of the archive on both sides once this run's
    arrived: each would pin WAL the source's retention removed. One a replay on the
    target still clones stays until a later run (its destroy fails, harmlessly), and so
    does one a clone being made or a drill running there will clone (readers.py)."""
    kept = _received_carry(ctx, core, on_target)
    if kept is None:
        return
    wanted = readers.being_read(link.target_host, core.archive_target)
    for run, dataset, snaps in (
            (ctx.runner(), core.archive, sources[core.archive].snapshots),
            (_on(link.target_host), core.archive_target,
             on_target[core.archive_target].snapshots)):
        old = [f"{dataset}@{s.name}" for s in snaps
               if s.name.startswith(core.archive_prefix) and s.name != kept]
        for name in old:
            if dataset == core.archive_target and name.split("@", 1)[1] in wanted:
                ctx.log(f"kept {name} for now: a clone being made replays from it")
                continue
            result = run(cmd("zfs", "destroy", snapshot_name(name)), timeout=120, check=False)
            if not result.ok:
                ctx.log(f"kept {name} for now: {result.stderr.strip()[-300:]}",
                        LogLine.Level.WARNING)


def _record_carried(ctx: StepContext, link: ReplicationLink, core, on_target: dict) -> None:
    """What the target can replay to now: the received archive snapshot, what it holds,
    and the window with the target's snapshots (their inventory just refreshed)."""
    label = _received_carry(ctx, core, on_target)
    if label is None:
        return
    carry = ctx.state["carry"]
    targets = core.targets()
    origin = link.source_host.clusters.filter(data_dir=link.cluster_data_dir).select_related(
        "data_dataset", "wal_dataset").first()
    wal = None
    if origin is not None and origin.wal_dataset_id and (
            origin.wal_dataset_id != origin.data_dataset_id):
        wal = targets.get(origin.wal_dataset.name)
    data = targets.get(origin.data_dataset.name) if origin and origin.data_dataset else None
    spans = []
    if data is not None:
        copy = copies.Copy(link.target_host_id, data, wal, core.archive_target, label,
                           carry.get("listing") or {}, carry.get("floor"))
        spans = copy.window()
    ReplicationLink.objects.filter(pk=link.pk).update(
        archive_snapshot=label, archive_listing=carry.get("listing") or {},
        archive_floor=carry.get("floor"), archive_window=[[s.since, s.until] for s in spans])
    ctx.log(f"the target can replay to {describe(spans)}" if spans else
            "the target reaches no moment yet: it needs a snapshot of the cluster with "
            "archived WAL after it")


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

