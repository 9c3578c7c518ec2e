"""Replication's operation kinds: run a link, and remove what a deleted link left.

(Work in progress: the steps are filled in by the replication engine change.)
"""

from __future__ import annotations

from datetime import timedelta

from apps.ops.engine import Fail, Kind, StepContext, register


def removal_state(link) -> dict:
    return {"link": link.name, "source_host": link.source_host_id,
            "target_host": link.target_host_id, "held": list(link.held)}


def _not_yet(ctx: StepContext) -> Fail:
    return Fail("replication steps are not built yet", code="not_built")


RUN = register(Kind(name="replication.run", steps={"plan": _not_yet}, first_step="plan",
                    mutating=False, deadline=timedelta(hours=24)))
REMOVE = register(Kind(name="replication.remove", steps={"remove": _not_yet},
                       first_step="remove", mutating=False, deadline=timedelta(minutes=30)))
