"""What pruning must spare for reasons other apps know, and who wants to hear of new
policy snapshots.

Snapshots imports nothing of the apps built on it (replication, clones): they
register here in their AppConfig.ready(). A protector answers, for a host and
some datasets, full snapshot names -> why they must stay (a replication link's
newest common snapshot); a listener is told after a policy took snapshots
(a link that replicates after each policy snapshot).
"""

from __future__ import annotations

from collections.abc import Callable

from apps.fleet.models import Host

Protector = Callable[[Host, list[str]], dict[str, str]]
Listener = Callable[[Host, list[str]], object]

PROTECTORS: list[Protector] = []
LISTENERS: list[Listener] = []


def protected(host: Host, datasets: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for protector in PROTECTORS:
        found.update(protector(host, datasets))
    return found


def policy_snapshot_taken(host: Host, datasets: list[str]) -> None:
    for listener in LISTENERS:
        listener(host, datasets)
