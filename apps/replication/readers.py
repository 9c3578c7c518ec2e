"""Who still reads a snapshot of a WAL archive's copy on a link's target: a clone being
made there, or a restore drill running there, clones it when its script runs, so a
link run must not destroy it first.

Replication knows nothing of clones or drills (they import it): each of those apps
appends, when Django starts, a function (target host, archive copy) -> the snapshot
names (after '@') it will read."""

from __future__ import annotations

from collections.abc import Callable

from apps.fleet.models import Host

READERS: list[Callable[[Host, str], set[str]]] = []


def being_read(host: Host, archive_copy: str) -> set[str]:
    """The snapshots of `archive_copy` on `host` that a registered reader will clone."""
    return {name for reader in READERS for name in reader(host, archive_copy)}
