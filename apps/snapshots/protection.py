"""What pruning must spare for reasons other apps know, and who wants to hear of new
policy snapshots, and who wants to hear of every snapshot taken.

Snapshots imports nothing of the apps built on it (replication, clones): they
register here in their AppConfig.ready(). A protector answers, for a host and
some datasets, full snapshot names -> why they must stay (a replication link's
newest common snapshot); a listener is told after a policy took snapshots
(a link that replicates after each policy snapshot); a taker is told, inside the
step that took them, of every snapshot the engine took (apps.wal marks where an
archiving cluster's WAL stood).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from apps.fleet.models import Host

if TYPE_CHECKING:
    from apps.ops.engine import StepContext

Protector = Callable[[Host, list[str]], dict[str, str]]
Listener = Callable[[Host, list[str]], object]

PROTECTORS: list[Protector] = []
LISTENERS: list[Listener] = []
# (the step's context, every dataset that got the snapshot, the label after '@')
Taker = Callable[["StepContext", list[str], str], object]
TAKEN: list[Taker] = []


def protected(host: Host, datasets: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for protector in PROTECTORS:
        found.update(protector(host, datasets))
    return found


def policy_snapshot_taken(host: Host, datasets: list[str]) -> None:
    for listener in LISTENERS:
        listener(host, datasets)


def snapshot_taken(ctx: StepContext, datasets: list[str], name: str) -> None:
    for taker in TAKEN:
        taker(ctx, datasets, name)
