"""What a replication run writes on its link as it goes, and the events it emits.

The snapshots a run holds are recorded on the link (`held`) as it holds them, so a run
killed mid-transfer leaves a record the next plan releases; a run that does not end in
sync writes its state and error on the link; a plan's steps are kept in the operation's
state as plain dicts (step_dict, step_of).
"""

from __future__ import annotations

from dataclasses import asdict

from django.db import transaction
from django.utils import timezone

from apps.common import events
from apps.replication.core.planner import Send, Side, Step, StepKind
from apps.replication.models import ReplicationLink


def entry(step: Step) -> str:
    """How `held` names the snapshot a hold step holds."""
    return f"{step.side.value}:{step.dataset}"


def note_held(link: ReplicationLink, entry: str, *, add: bool) -> None:
    """`entry` ("source:<snapshot>" or "target:<snapshot>") added to the link's `held`, or
    taken out of it."""
    with transaction.atomic():
        row = ReplicationLink.objects.select_for_update().get(pk=link.pk)
        held = [h for h in row.held if h != entry] + ([entry] if add else [])
        ReplicationLink.objects.filter(pk=link.pk).update(held=held)


def record_outcome(link: ReplicationLink, state: str, error: str) -> None:
    """The link's state after a run that did not end in sync (failed, refused, busy)."""
    now = timezone.now()
    ReplicationLink.objects.filter(pk=link.pk).update(state=state, last_error=error[:4000],
                                                      last_run_at=now, updated_at=now)
    if state == ReplicationLink.State.FAILED:
        LINK_FAILED.emit(subject(link), error=error[-1000:])


def subject(link: ReplicationLink) -> dict:
    return {"type": "replication_link", "id": link.pk, "name": link.name}


# Automation hears of these (apps/events); the registry is apps/common/events.py.
LINK_IN_SYNC = events.register(events.EventKind("link.in_sync",
                                                "A replication link ran and is in sync"))
LINK_FAILED = events.register(events.EventKind("link.failed", "A replication run failed"))


def step_dict(step: Step) -> dict:
    return {"kind": step.kind.value, "side": step.side.value, "dataset": step.dataset,
            "text": step.text, "destroys": list(step.destroys),
            "send": asdict(step.send) if step.send else None}


def step_of(values: dict) -> Step:
    send = Send(**values["send"]) if values.get("send") else None
    return Step(StepKind(values["kind"]), Side(values["side"]), values["dataset"],
                values["text"], send, tuple(values.get("destroys", ())))


def note_large_blocks(link: ReplicationLink, send: Send) -> None:
    """The -L of the link's first send is kept by every later one (streams.py): written
    before that send starts, so a send cut short still counts. A resume carries its
    flags in its token; a raw send implies -L whatever the link says."""
    if send.resume_token or send.raw or link.large_blocks_sent is not None:
        return
    ReplicationLink.objects.filter(pk=link.pk, large_blocks_sent=None).update(
        large_blocks_sent=send.large_blocks)
