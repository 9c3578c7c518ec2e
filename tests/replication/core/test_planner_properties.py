"""Properties of plan_link for any listings, found by Hypothesis.

Sources are chains of snapshots; targets are missing, or hold a subset of the
source's snapshots (same guid, sometimes renamed), plus sometimes snapshots of
their own (diverged), impostors (a source name with another guid), data
written since, or a resume token. A small simulator applies a plan's steps to
the target and plans again: the link converges to in sync.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.replication.core.link import Link, Mode
from apps.replication.core.planner import (
    Action,
    Side,
    Snap,
    StepKind,
    TargetState,
    ordered,
    plan_link,
)
from tests.replication.core.helpers import FUSE, OZ, snap, source

SETTINGS = settings(max_examples=300, deadline=None, database=None)


@st.composite
def scenario(draw):
    count = draw(st.integers(0, 6))
    src = tuple(snap(f"s{i}", 100 + i, i) for i in range(count))
    link = Link("l", ("tank/db",), "backup/h1",
                mode=draw(st.sampled_from(list(Mode))), rollback_opt_in=draw(st.booleans()))
    if draw(st.integers(0, 4)) == 0:
        tgt = TargetState(False)
    else:
        kept = [s for s in src if draw(st.booleans())]
        kept = [replace(s, name=f"r{s.name}") if draw(st.integers(0, 5)) == 0 else s
                for s in kept]
        extra = []
        if draw(st.integers(0, 3)) == 0:
            extra.append(snap("own", 900, 20, userrefs=draw(st.sampled_from([0, 0, 1]))))
        if src and draw(st.integers(0, 5)) == 0:
            extra.append(snap(src[-1].name, 901, 21))  # impostor
        tgt = TargetState(True, tuple(kept + extra),
                          written=draw(st.sampled_from([0, 0, None, 4096])),
                          resume_token=draw(st.sampled_from([None, None, None, "1-abc"])))
    caps = draw(st.sampled_from([(OZ, OZ), (FUSE, FUSE), (OZ, FUSE), (FUSE, OZ)]))
    return link, src, tgt, caps


def _plan(link, src, tgt, caps, held=()):
    return plan_link(link, {"tank/db": source(*src)}, {"tank/db": tgt}, *caps, held=held)


@SETTINGS
@given(scenario())
def test_no_rollback_without_opt_in_and_never_a_destroy_of_a_dataset(case):
    link, src, tgt, caps = case
    p = _plan(link, src, tgt, caps)
    rollbacks = [s for s in p.steps if s.kind is StepKind.ROLLBACK]
    if not link.rollback_opt_in:
        assert not rollbacks
    for step in rollbacks:
        assert step.side is Side.TARGET
        assert step.dataset == f"backup/h1/db@{p.datasets[0].target_common}"
        assert all(name.startswith("backup/h1/db@") for name in step.destroys)
    if p.refused:
        assert p.steps == ()


@SETTINGS
@given(scenario())
def test_common_snapshot_is_held_on_both_sides_around_every_send(case):
    link, src, tgt, caps = case
    p = _plan(link, src, tgt, caps)
    kinds = [s.kind for s in p.steps]
    if StepKind.SEND not in kinds:
        return
    first_send = kinds.index(StepKind.SEND)
    last_send = len(kinds) - 1 - kinds[::-1].index(StepKind.SEND)
    held = {(s.side, s.dataset) for s in p.steps[:first_send] if s.kind is StepKind.HOLD}
    released = {(s.side, s.dataset) for s in p.steps[last_send:] if s.kind is StepKind.RELEASE}
    assert held == released
    d = p.datasets[0]
    if d.common:
        assert (Side.SOURCE, f"tank/db@{d.common}") in held
        assert (Side.TARGET, f"backup/h1/db@{d.target_common}") in held
    for step in p.steps:
        if step.send and step.send.from_snapshot:
            assert (Side.SOURCE, step.send.from_snapshot) in held
        if step.send and step.send.snapshot:
            assert (Side.SOURCE, step.send.snapshot) in held


@SETTINGS
@given(scenario())
def test_incrementals_start_from_a_snapshot_the_target_has_by_guid(case):
    link, src, tgt, caps = case
    p = _plan(link, src, tgt, caps)
    target_guids = {s.guid for s in tgt.snapshots}
    by_name = {f"tank/db@{s.name}": s for s in src}
    full_sent = set()
    for step in p.steps:
        send = step.send
        if send is None or send.resume_token:
            continue
        if send.from_snapshot is None:
            full_sent.add(by_name[send.snapshot].guid)
        else:
            assert by_name[send.from_snapshot].guid in target_guids | full_sent


@SETTINGS
@given(scenario())
def test_executing_a_plan_converges_to_in_sync(case):
    link, src, tgt, caps = case
    for _ in range(3):
        p = _plan(link, src, tgt, caps)
        if p.action in (Action.IN_SYNC, Action.REFUSED):
            break
        tgt = _apply(p, src, tgt)
    else:
        raise AssertionError("did not converge")
    if p.action is Action.IN_SYNC and src:
        assert src[-1].guid in {s.guid for s in tgt.snapshots}


def _apply(plan, src: tuple[Snap, ...], tgt: TargetState) -> TargetState:
    """What ZFS would do. A received snapshot gets the target's next txg (its createtxg
    is the target pool's), while `creation` travels with it."""
    snaps = ordered(tgt.snapshots)

    def received(*new: Snap) -> list[Snap]:
        txg = max((s.createtxg or 0 for s in snaps), default=0)
        return [replace(s, createtxg=txg + 1 + i) for i, s in enumerate(new)]

    exists, token, written = tgt.exists, tgt.resume_token, tgt.written
    by_name = {f"tank/db@{s.name}": s for s in src}
    for step in plan.steps:
        if step.kind is StepKind.DISCARD_PARTIAL:
            token = None
            exists = exists and bool(snaps)
        elif step.kind is StepKind.ROLLBACK:
            label = step.dataset.split("@")[1]
            keep = next(i for i, s in enumerate(snaps) if s.name == label)
            snaps, written = snaps[:keep + 1], 0
        elif step.kind is StepKind.SEND and step.send:
            send = step.send
            if send.resume_token:  # lands the newest source snapshot, if ZFS could take it
                token, exists = None, True
                if not {s.name for s in snaps} & {src[-1].name}:
                    snaps += received(src[-1])
                continue
            to = by_name[send.snapshot]
            if send.from_snapshot is None:
                snaps, exists = [], True
                snaps = received(to)
            else:
                start = src.index(by_name[send.from_snapshot])
                new = src[start + 1:src.index(to) + 1] if send.intermediates else (to,)
                snaps += received(*new)
    return TargetState(exists, tuple(snaps), written, token)
