"""What one replication run of a link does, decided from listings alone.

plan_link() is given the link, each source dataset's snapshots, each target
dataset's state, both hosts' capabilities and the snapshots the app recorded
as still held by this link, and returns a LinkPlan: an action per dataset and
the ordered steps. It runs nothing; the app executes the steps (sends detached
on the source, the rest as an Operation over PoZoL's own SSH) and plans again
after a transfer until the link is in sync or refused, as zrepl's loop does.

Decisions, per dataset:
- a resumable partial receive on the target (receive_resume_token) resumes
  with `zfs send -t` when both hosts can; otherwise the partial state is
  discarded (`zfs recv -A`, which drops only the unfinished receive) and the
  transfer restarts from the newest common snapshot, and the plan says so.
- no target dataset: full send. With -I the OLDEST source snapshot goes full,
  then -I oldest..newest, as syncoid does, so the target holds the source's
  whole history and its own retention (keep_receiver) has something to keep;
  with -i only the newest goes full, because -i asks for no intermediates.
- the newest common snapshot is matched by guid, never by name (zrepl and
  newer syncoid do the same): a target snapshot with the same name but
  another guid is not common, it is a conflict.
- in sync when the common snapshot is the newest source snapshot to send.
- refused when: the source has no snapshot; the target exists with no common
  snapshot (whether or not it has snapshots: PoZoL never destroys a target
  dataset, the opt-in does not change that); the target diverged (a snapshot
  newer than the common one, or `written` > 0 since it) and the operator did
  not opt in; the opt-in is given but a snapshot to roll back is held or has
  clones (`zfs rollback -r` would fail; -R would destroy clones: never used).
- with the opt-in, a diverged target is rolled back first:
  `zfs rollback -r target@common`, the destroyed snapshots listed in the plan.
  `zfs recv -F` is never used: it would roll back (and with -I destroy)
  silently. That is syncoid's pitfall: 1.4 ran `zfs rollback -R` (clones
  too) and `receive -F` on every incremental; later versions made it opt-out
  (--no-rollback), here it is opt-in.
- busy: a receive is already running into a target dataset (another run or
  another link; syncoid checks `ps` for the same reason): nothing is done
  this time, the plan is BUSY and the next run decides again.
- where `written` is unknown (zfs-fuse has no such property) the plan says so;
  a receive without -F is then refused by ZFS itself if the target changed
  ("destination has been modified"), so nothing is lost either way.

The carried WAL archive (Link.archive, apps/wal's dataset of the source cluster) is
planned as one more dataset, by the same rules, with two differences: only its
snapshots the link took (`pozol-carry-<link>-<stamp>`, one per run) are considered on
the source, and it goes newest-only (-i) whatever the link's mode, since each of them
holds every segment the source still keeps; a refusal of the archive refuses the
link, as any dataset's does.

Sending to: for a cluster, the newest snapshot NAME present on every source
dataset (one `zfs snapshot -r` makes one), so the target never ends with data
and WAL from different moments; a single dataset sends its newest snapshot.

Holds (tag per link, see Link.hold_tag): while a transfer is in flight, the
common snapshot is held on both sides and the snapshot being sent on the
source; all are released after it. The app records what it held; a run killed
mid-transfer leaves holds, which the next plan releases (`held` input) unless
it needs them again. Between runs the newest common snapshot is protected by
the pruners (retention.plan_prune's `protected`, see protected_snapshots()).

Properties: sent with -p where the source can (both dialects can), so
recordsize, compression and PoZoL's user properties (pozol:owner/policy, which
receiver-side pruning relies on) survive. Not carried, said in the plan:
properties the source inherits from its parents (only -R sends those), holds
and clones. A locally set source mountpoint would mount the copy over a path
of the target host: where the target can, `-x mountpoint -o canmount=noauto
-u` avoid it; where it cannot (zfs-fuse: no -x/-o/-u), -p is left out for
that dataset and the plan says which properties are then lost.

Stream flags: each dataset's sends use the -w/-c/-L that streams.decide chooses
(DatasetPlan.stream, each flag with its reason, which the run logs); a dataset
whose stream cannot be sent (an encrypted one whose target cannot receive raw,
say) is refused with that reason, and one whose `encryption` was not read where
the source has native encryption is refused rather than guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum

from apps.replication.core import streams
from apps.replication.core.capabilities import ReplicationCapabilities, stream_refusal
from apps.replication.core.link import Link, Mode, ReplicationError
from apps.replication.core.streams import Copy, Encryption, StreamFlags


@dataclass(frozen=True)
class Snap:
    """One snapshot as `zfs get -Hp guid,creation,createtxg,userrefs,clones` shows it.

    `name` is the part after '@'; `createtxg` orders exactly when known
    (snapshots taken in the same second), else creation then listing order.
    """

    name: str
    guid: int
    created: datetime
    createtxg: int | None = None
    userrefs: int = 0
    clones: tuple[str, ...] = ()
    used: int | None = None  # bytes, for the size estimate where -nvP is missing
    referenced: int | None = None


@dataclass(frozen=True)
class SourceState:
    snapshots: tuple[Snap, ...]
    # names of properties set locally on the source dataset (zfs get -s local)
    local_properties: frozenset[str] = frozenset()
    # `encryption`/`keystatus`; None: not read (a ZFS without native encryption)
    encryption: Encryption | None = None


@dataclass(frozen=True)
class TargetState:
    exists: bool
    snapshots: tuple[Snap, ...] = ()
    written: int | None = None  # bytes written since its newest snapshot; None: unknown
    resume_token: str | None = None  # receive_resume_token, None for "-"
    busy: bool = False  # a zfs recv into it is running (ps, or the app's lock)
    encryption: str | None = None  # its `encryption`; None: not read
    encryption_root: str | None = None  # its `encryptionroot` ("-" when not encrypted)


class Action(StrEnum):
    FULL = "full"
    INCREMENTAL = "incremental"
    RESUME = "resume"
    ROLLBACK = "rollback"  # diverged, opted in, and nothing newer to send
    IN_SYNC = "in_sync"
    BUSY = "busy"  # a receive into the target is running: try again later
    REFUSED = "refused"


class StepKind(StrEnum):
    RELEASE_STALE = "release_stale"  # a hold left by an interrupted run
    DISCARD_PARTIAL = "discard_partial"  # zfs recv -A: an unresumable partial receive
    ROLLBACK = "rollback"  # zfs rollback -r target@common (opt-in only)
    ENSURE_PARENT = "ensure_parent"  # zfs create -p of the target dataset's parent
    HOLD = "hold"
    SEND = "send"  # the detached pipeline on the source
    FIX_PROPERTIES = "fix_properties"  # readonly/canmount where recv -o is missing
    RELEASE = "release"


class Side(StrEnum):
    SOURCE = "source"
    TARGET = "target"


@dataclass(frozen=True)
class Send:
    """One `zfs send | zfs recv`: full (from_snapshot None), incremental, or resume."""

    source: str  # dataset
    target: str  # dataset
    snapshot: str | None  # full name on the source; None when resuming
    from_snapshot: str | None = None  # full name on the source
    intermediates: bool = False  # -I rather than -i
    properties: bool = False  # -p
    resume_token: str | None = None
    compressed: bool = False  # -c: blocks as compressed on disk
    large_blocks: bool = False  # -L: records over 128K kept whole
    raw: bool = False  # -w: an encrypted dataset's blocks as stored (implies -c and -L)


@dataclass(frozen=True)
class Step:
    kind: StepKind
    side: Side
    dataset: str  # what it acts on: a snapshot's full name, or a dataset
    text: str  # for people
    send: Send | None = None
    destroys: tuple[str, ...] = ()  # ROLLBACK: the target snapshots it destroys


@dataclass(frozen=True)
class DatasetPlan:
    source: str
    target: str
    action: Action
    steps: tuple[Step, ...] = ()
    reason: str = ""  # why this action (for REFUSED: what to do about it)
    common: str | None = None  # newest common snapshot's name on the source, if any
    target_common: str | None = None  # the same snapshot's name on the target
    notes: tuple[str, ...] = ()
    stream: StreamFlags | None = None  # the flags of its sends and why (streams.decide)


@dataclass(frozen=True)
class LinkPlan:
    link: str
    action: Action  # REFUSED, else BUSY, if any dataset is; IN_SYNC if all are; else the
    # largest of ROLLBACK < INCREMENTAL < RESUME < FULL
    datasets: tuple[DatasetPlan, ...]
    sending: str | None  # the snapshot name being replicated to
    notes: tuple[str, ...] = ()
    steps: tuple[Step, ...] = field(default=())  # all datasets' steps in execution order

    @property
    def refused(self) -> bool:
        return self.action is Action.REFUSED

    def reasons(self) -> tuple[str, ...]:
        return tuple(f"{d.source}: {d.reason}" for d in self.datasets
                     if d.action is Action.REFUSED)


_RANK = (Action.IN_SYNC, Action.ROLLBACK, Action.INCREMENTAL, Action.RESUME, Action.FULL)


def plan_link(link: Link, sources: Mapping[str, SourceState],
              targets: Mapping[str, TargetState], source_caps: ReplicationCapabilities,
              target_caps: ReplicationCapabilities, held: Iterable[str] = (),
              resume_failed: bool = False) -> LinkPlan:
    """One run of `link`. `sources`/`targets` are keyed by the source dataset;
    `held`: snapshots (full names; prefix "source:" or "target:") this link's
    tag may still hold from an interrupted run; `resume_failed`: the last run's
    `zfs send -t` failed (token stale, snapshot gone), so partial receives are
    discarded rather than resumed again and again."""
    _check_inputs(link, sources, targets)
    sending = _sending_name(link, sources)
    notes = _link_notes(link, source_caps, target_caps)
    if refusal := stream_refusal(source_caps, target_caps):
        refused = tuple(DatasetPlan(s, link.target_of(s), Action.REFUSED, reason=refusal)
                        for s in link.sources)
        return LinkPlan(link.name, Action.REFUSED, refused, sending, notes, ())
    plans = []
    for source in link.sources:
        plans.append(_plan_dataset(link, source, link.target_of(source), sources[source],
                                   targets[source], sending, source_caps, target_caps,
                                   resume_failed))
    if link.archive is not None:
        plans.append(_plan_archive(link, sources[link.archive], targets[link.archive],
                                   source_caps, target_caps, resume_failed))
    plans = [_with_holds(p, sources[p.source], targets[p.source]) for p in plans]
    action = _link_action(plans)
    if action in (Action.REFUSED, Action.BUSY):
        steps: tuple[Step, ...] = ()
    else:
        steps = _stale_releases(plans, held) + _once(s for p in plans for s in p.steps)
    return LinkPlan(link.name, action, tuple(plans), sending, notes, steps)


def _plan_archive(link: Link, src: SourceState, tgt: TargetState,
                  source_caps: ReplicationCapabilities, target_caps: ReplicationCapabilities,
                  resume_failed: bool) -> DatasetPlan:
    archive, target = link.archive, link.archive_target
    assert archive is not None and target is not None
    ours = tuple(s for s in src.snapshots if s.name.startswith(link.archive_prefix))
    newest = ordered(ours)[-1].name if ours else None
    return _plan_dataset(replace(link, mode=Mode.NEWEST_ONLY), archive, target,
                         replace(src, snapshots=ours), tgt, newest, source_caps, target_caps,
                         resume_failed)


def _check_inputs(link: Link, sources: Mapping[str, SourceState],
                  targets: Mapping[str, TargetState]) -> None:
    for source in link.sources + ((link.archive,) if link.archive else ()):
        if source not in sources:
            raise ReplicationError("sources", f"No snapshot listing given for {source}.")
        if source not in targets:
            raise ReplicationError("targets", f"No target state given for {source}.")
        for snap in sources[source].snapshots + targets[source].snapshots:
            if not snap.name or "@" in snap.name or "/" in snap.name:
                raise ReplicationError("snapshots", f"Not a snapshot label: {snap.name!r}.")


def ordered(snapshots: Iterable[Snap]) -> list[Snap]:
    """Oldest first, by createtxg where every snapshot has one, else by creation."""
    listed = list(snapshots)
    if listed and all(s.createtxg is not None for s in listed):
        return sorted(listed, key=lambda s: s.createtxg or 0)
    return sorted(listed, key=lambda s: s.created)  # stable: listing order breaks ties


def _sending_name(link: Link, sources: Mapping[str, SourceState]) -> str | None:
    """The newest snapshot name present on every source dataset."""
    first, *rest = (ordered(sources[s].snapshots) for s in link.sources)
    everywhere = set.intersection({s.name for s in first}, *({s.name for s in r} for r in rest))
    newest = [s.name for s in first if s.name in everywhere]
    return newest[-1] if newest else None


def _plan_dataset(link: Link, source: str, target: str, src: SourceState, tgt: TargetState,
                  sending: str | None, source_caps: ReplicationCapabilities,
                  target_caps: ReplicationCapabilities, resume_failed: bool) -> DatasetPlan:
    plan = DatasetPlan(source, target, Action.REFUSED)
    snaps = ordered(src.snapshots)
    if not snaps:
        return _refuse(plan, "the source has no snapshot yet: take one (or let its policy "
                             "run) before replicating.")
    if sending is None:
        return _refuse(plan, "the source datasets have no snapshot name in common: a "
                             "cluster is replicated from one `zfs snapshot -r` of its parent.")
    if tgt.busy:
        return replace(plan, action=Action.BUSY,
                       reason=f"a receive into {target} is already running; the next run "
                              "decides again.")
    notes: list[str] = []
    prefix: list[Step] = []
    if tgt.resume_token:
        if source_caps.resumable and target_caps.resumable and not resume_failed:
            return _resume(plan, tgt.resume_token)
        why = "resuming it failed" if resume_failed else "the source cannot resume it"
        prefix.append(Step(StepKind.DISCARD_PARTIAL, Side.TARGET, target,
                           f"zfs recv -A {target}: discard the partial receive ({why})"))
        notes.append(f"An interrupted transfer is not resumed ({why}); it restarts from the "
                     "newest common snapshot.")
        # discarding an interrupted first (full) receive removes the half-made dataset
        tgt = replace(tgt, exists=tgt.exists and bool(tgt.snapshots), resume_token=None)
    if source_caps.raw_stream and src.encryption is None:
        return _refuse(plan, "whether the dataset is encrypted was not read (its "
                             "`encryption` property), so its stream flags cannot be chosen.")
    stream = streams.decide(link, source_caps, target_caps, src.encryption,
                            _copy(tgt, target, target_caps))
    plan = replace(plan, stream=stream)
    if not tgt.exists:
        return _full(link, plan, source, snaps, sending, src, source_caps, target_caps,
                     prefix, notes)
    return _incremental(link, plan, source, target, snaps, tgt, sending, src, source_caps,
                        target_caps, prefix, notes)


def _copy(tgt: TargetState, target: str, caps: ReplicationCapabilities) -> Copy | None:
    """What the target holds, for the raw decision: a raw receive leaves an encrypted
    dataset that is its own encryption root; a decrypted one into an encrypted parent
    inherits the parent's. None where a target that has encryption did not say."""
    if not tgt.exists:
        return Copy.NONE
    if not caps.raw_stream:
        return Copy.PLAIN
    if tgt.encryption is None:
        return None
    encrypted = tgt.encryption not in ("off", "-", "")
    return Copy.RAW if encrypted and tgt.encryption_root == target else Copy.PLAIN


def _refuse(plan: DatasetPlan, reason: str) -> DatasetPlan:
    return replace(plan, action=Action.REFUSED, steps=(), reason=reason)


def _resume(plan: DatasetPlan, token: str) -> DatasetPlan:
    send = Send(plan.source, plan.target, None, resume_token=token)
    step = Step(StepKind.SEND, Side.SOURCE, plan.source,
                f"resume the interrupted transfer into {plan.target} (zfs send -t)", send)
    return DatasetPlan(plan.source, plan.target, Action.RESUME, (step,),
                       "a partial receive is waiting on the target; it resumes where it "
                       "stopped.")


def _full(link: Link, plan: DatasetPlan, source: str, snaps: list[Snap], sending: str,
          src: SourceState, source_caps: ReplicationCapabilities,
          target_caps: ReplicationCapabilities, prefix: list[Step],
          notes: list[str]) -> DatasetPlan:
    stream = plan.stream or StreamFlags()
    if stream.refusal:
        return _refuse(plan, stream.refusal)
    props, prop_notes = _properties(src, source_caps, target_caps, stream)
    to = next(s for s in snaps if s.name == sending)
    first = snaps[0] if link.mode is Mode.INTERMEDIATES else to
    first_full, to_full = f"{source}@{first.name}", f"{source}@{to.name}"
    steps = [*prefix, Step(StepKind.ENSURE_PARENT, Side.TARGET, _parent(plan.target),
                           f"create {_parent(plan.target)} if missing (readonly, not mounted)")]
    flags = _send_flags(stream)
    steps.append(_send_step(Send(source, plan.target, first_full, properties=props, **flags),
                            f"full send of {first_full}"))
    if first is not to:
        steps.append(_send_step(
            Send(source, plan.target, to_full, first_full, intermediates=True,
                 properties=props, **flags),
            f"incremental -I {first.name} .. {to.name} (every snapshot between)"))
    steps += _fix_properties(plan.target, target_caps)
    why = ("the target dataset does not exist: first run, full send of the "
           + ("oldest snapshot, then every later one" if first is not to
              else "newest snapshot"))
    return replace(plan, action=Action.FULL, steps=tuple(steps), reason=why,
                   notes=(*notes, *prop_notes))


def _incremental(link: Link, plan: DatasetPlan, source: str, target: str, snaps: list[Snap],
                 tgt: TargetState, sending: str, src: SourceState,
                 source_caps: ReplicationCapabilities, target_caps: ReplicationCapabilities,
                 prefix: list[Step], notes: list[str]) -> DatasetPlan:
    theirs = ordered(tgt.snapshots)
    by_guid = {s.guid: s for s in snaps}
    common_at = max((i for i, s in enumerate(theirs) if s.guid in by_guid), default=None)
    if common_at is None:
        return _refuse(plan, _no_common_reason(target, theirs, snaps))
    common_tgt = theirs[common_at]
    common_src = by_guid[common_tgt.guid]
    plan = replace(plan, common=common_src.name, target_common=common_tgt.name)
    newer = theirs[common_at + 1:]
    written = tgt.written if not newer else None
    if tgt.written is None and not newer:
        notes.append(f"{target} cannot say whether it was written since "
                     f"@{common_tgt.name} (no `written` property on this host); a receive "
                     "without -F is refused by ZFS itself if it was.")
    diverged = _divergence(target, common_tgt, newer, written)
    steps = list(prefix)
    if diverged:
        if not link.rollback_opt_in:
            return _refuse(plan, f"the target diverged: {diverged}. Opt in to rolling it back "
                                 f"to @{common_tgt.name} (this destroys what diverged), or "
                                 "repair it by hand.")
        blocked = [f"@{s.name} ({_why_blocked(s)})" for s in newer if _why_blocked(s)]
        if blocked:
            return _refuse(plan, "the target diverged and rolling it back would destroy "
                                 f"{', '.join(blocked)}: release or remove those first.")
        destroys = tuple(f"{target}@{s.name}" for s in newer)
        steps.append(Step(StepKind.ROLLBACK, Side.TARGET, f"{target}@{common_tgt.name}",
                          f"zfs rollback -r {target}@{common_tgt.name} (opted in): "
                          + (f"destroys {', '.join(destroys)}" if destroys
                             else "discards what was written since"), destroys=destroys))
    to = next(s for s in snaps if s.name == sending)
    if snaps.index(common_src) >= snaps.index(to):
        if diverged:
            return replace(plan, action=Action.ROLLBACK, steps=tuple(steps),
                           reason=f"the target diverged: {diverged}; rolled back (opted "
                                  "in), then in sync", notes=tuple(notes))
        return replace(plan, action=Action.IN_SYNC, steps=tuple(steps),
                       reason=f"in sync at @{common_src.name}", notes=tuple(notes))
    stream = plan.stream or StreamFlags()
    if stream.refusal:
        return _refuse(plan, stream.refusal)
    props, prop_notes = _properties(src, source_caps, target_caps, stream)
    intermediates = link.mode is Mode.INTERMEDIATES
    flag = "-I" if intermediates else "-i"
    steps.append(_send_step(
        Send(source, target, f"{source}@{to.name}", f"{source}@{common_src.name}",
             intermediates=intermediates, properties=props, **_send_flags(stream)),
        f"incremental {flag} {common_src.name} .. {to.name}"))
    reason = f"newest common snapshot @{common_src.name} (by guid); sending up to @{to.name}"
    if diverged:
        reason += f"; the target diverged ({diverged}) and is rolled back first (opted in)"
    return replace(plan, action=Action.INCREMENTAL, steps=tuple(steps), reason=reason,
                   notes=(*notes, *prop_notes))


def _no_common_reason(target: str, theirs: list[Snap], snaps: list[Snap]) -> str:
    names = {s.name for s in snaps}
    same_name = [s.name for s in theirs if s.name in names]
    detail = (f" (@{same_name[-1]} has the same name but another guid: it is not the "
              "same snapshot)" if same_name else "")
    has = "has no snapshot" if not theirs else "shares no snapshot with the source" + detail
    return (f"{target} exists but {has}. PoZoL never destroys a target dataset: rename or "
            "destroy it by hand, or choose another target parent.")


def _divergence(target: str, common: Snap, newer: list[Snap], written: int | None) -> str:
    if newer:
        names = ", ".join(f"@{s.name}" for s in newer)
        return f"{target} has snapshots newer than the common @{common.name}: {names}"
    if written:
        return f"{written} bytes were written to {target} since @{common.name}"
    return ""


def _why_blocked(snap: Snap) -> str:
    if snap.userrefs:
        return f"held ({snap.userrefs})"
    if snap.clones:
        return f"has clones: {', '.join(snap.clones)}"
    return ""


def _properties(src: SourceState, source_caps: ReplicationCapabilities,
                target_caps: ReplicationCapabilities,
                stream: StreamFlags) -> tuple[bool, tuple[str, ...]]:
    not_carried = "Not carried: properties the source inherits from its parents, holds, clones."
    if not stream.properties:
        return False, ("Properties are not carried: ZFS sends an encrypted dataset with -p "
                       "only raw (-w), and this one goes decrypted (see -w).",)
    if not source_caps.send_properties:
        return False, ("Properties are not carried (the source cannot send -p): recordsize, "
                       "compression and pozol:* properties take the target's defaults.",)
    if "mountpoint" in src.local_properties and not target_caps.recv_properties:
        return False, ("Properties are not carried: the source sets its own mountpoint and "
                       "this target cannot exclude it on receive (no recv -x), so -p would "
                       "mount the copy over a path of the target. Set recordsize and "
                       "compression on the target parent instead.",)
    return True, (not_carried,)


def _send_flags(stream: StreamFlags) -> dict[str, bool]:
    """The Send fields of the stream flags: -w alone where raw (it implies -c and -L)."""
    if stream.raw:
        return {"raw": True, "compressed": False, "large_blocks": False}
    return {"raw": False, "compressed": stream.compressed, "large_blocks": stream.large_blocks}


def _fix_properties(target: str, caps: ReplicationCapabilities) -> list[Step]:
    if caps.recv_properties:
        return []
    return [Step(StepKind.FIX_PROPERTIES, Side.TARGET, target,
                 f"set readonly=on and canmount=noauto on {target} after it arrives "
                 "(this host cannot set them on receive)")]


def _send_step(send: Send, text: str) -> Step:
    return Step(StepKind.SEND, Side.SOURCE, send.snapshot or send.source, text, send)


def _parent(dataset: str) -> str:
    return dataset.rsplit("/", 1)[0]


def _with_holds(plan: DatasetPlan, src: SourceState, tgt: TargetState) -> DatasetPlan:
    """Hold the common snapshot on both sides and each snapshot being sent, while in flight.

    A resume's from/to live in the opaque token, so it holds the newest common only.
    """
    sends = [s.send for s in plan.steps if s.send is not None]
    if not sends:
        return plan
    common = _newest_common(src, tgt)
    source_holds = [f"{plan.source}@{common[0].name}"] if common else []
    for send in sends:
        for name in (send.from_snapshot, send.snapshot):
            if name and name not in source_holds:
                source_holds.append(name)
    target_holds = [f"{plan.target}@{common[1].name}"] if common else []
    holds = [Step(StepKind.HOLD, Side.SOURCE, n, f"hold {n} while it is sent")
             for n in source_holds]
    holds += [Step(StepKind.HOLD, Side.TARGET, n, f"hold {n} (the common snapshot)")
              for n in target_holds]
    releases = tuple(Step(StepKind.RELEASE, h.side, h.dataset, f"release {h.dataset}")
                     for h in holds)
    return replace(plan, steps=tuple(sorted((*holds, *plan.steps), key=_step_order))
                   + releases)


# Holds come before anything touches the target; ties keep the planner's order.
_ORDER = (StepKind.RELEASE_STALE, StepKind.DISCARD_PARTIAL, StepKind.HOLD, StepKind.ROLLBACK,
          StepKind.ENSURE_PARENT, StepKind.SEND, StepKind.FIX_PROPERTIES, StepKind.RELEASE)


def _step_order(step: Step) -> int:
    return _ORDER.index(step.kind)


def _newest_common(src: SourceState, tgt: TargetState) -> tuple[Snap, Snap] | None:
    by_guid = {s.guid: s for s in src.snapshots}
    for theirs in reversed(ordered(tgt.snapshots)):
        if theirs.guid in by_guid:
            return by_guid[theirs.guid], theirs
    return None


def _once(steps: Iterable[Step]) -> tuple[Step, ...]:
    """A cluster's datasets share a target parent: create it once."""
    seen: set[str] = set()
    kept = []
    for step in steps:
        if step.kind is StepKind.ENSURE_PARENT:
            if step.dataset in seen:
                continue
            seen.add(step.dataset)
        kept.append(step)
    return tuple(kept)


def _stale_releases(plans: list[DatasetPlan], held: Iterable[str]) -> tuple[Step, ...]:
    wanted = {f"{s.side}:{s.dataset}" for p in plans for s in p.steps if s.kind is StepKind.HOLD}
    stale = []
    for entry in held:
        side, _, name = entry.partition(":")
        if entry not in wanted and side in (Side.SOURCE, Side.TARGET) and "@" in name:
            stale.append(Step(StepKind.RELEASE_STALE, Side(side), name,
                              f"release {name}, still held by an interrupted run"))
    return tuple(stale)


def _link_action(plans: Sequence[DatasetPlan]) -> Action:
    for blocking in (Action.REFUSED, Action.BUSY):
        if any(p.action is blocking for p in plans):
            return blocking
    return max((p.action for p in plans), key=_RANK.index)


def _link_notes(link: Link, source_caps: ReplicationCapabilities,
                target_caps: ReplicationCapabilities) -> tuple[str, ...]:
    notes = []
    if not (source_caps.resumable and target_caps.resumable):
        notes.append("Not resumable on these hosts (zfs recv -s / zfs send -t missing): an "
                     "interrupted transfer restarts from the newest common snapshot.")
    if link.bandwidth_limit and not source_caps.can_limit_bandwidth:
        notes.append(f"No bandwidth limit can be applied: neither pv nor mbuffer is installed "
                     f"on the source; the limit of {link.bandwidth_limit} B/s is ignored "
                     "until one is.")
    if not source_caps.send_estimate:
        notes.append("The expected size is an estimate from the snapshots' used/referenced "
                     "(this host has no zfs send -nvP).")
    return tuple(notes)


def protected_snapshots(plan: LinkPlan, side: Side = Side.SOURCE) -> dict[str, str]:
    """Full name -> reason, for retention.plan_prune's `protected` on that side: the
    newest common snapshot of each dataset of this link."""
    reason = f"last common snapshot of link {plan.link}"
    if side is Side.SOURCE:
        return {f"{d.source}@{d.common}": reason for d in plan.datasets if d.common}
    return {f"{d.target}@{d.target_common}": reason for d in plan.datasets if d.target_common}


def newest_common_name(sources: tuple[str, ...], targets: dict[str, str], source_states: dict,
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
