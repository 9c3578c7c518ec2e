"""Small builders for replication planner inputs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apps.replication.core.capabilities import OPENZFS_CAPABILITIES, ZFS_FUSE_CAPABILITIES
from apps.replication.core.link import Link
from apps.replication.core.planner import Snap, SourceState, TargetState
from apps.replication.core.streams import NOT_ENCRYPTED, Encryption

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FUSE = ZFS_FUSE_CAPABILITIES
OZ = OPENZFS_CAPABILITIES
DATA, WAL = "tank/pg/main/data", "tank/pg/main/wal"


def snap(name: str, guid: int, hour: int, **kw: object) -> Snap:
    return Snap(name, guid, T0 + timedelta(hours=hour), createtxg=100 + hour, **kw)


def chain(*names: str, base: int = 1000) -> tuple[Snap, ...]:
    """Snapshots named `names`, one an hour, guid base+i."""
    return tuple(snap(n, base + i, i) for i, n in enumerate(names))


def single(**kw: object) -> Link:
    return Link("l1", ("tank/db",), "backup/h1", **kw)


def cluster(**kw: object) -> Link:
    return Link("pg", (DATA, WAL), "backup/h1", **kw)


def source(*snaps: Snap, local: frozenset[str] = frozenset(),
           encryption: Encryption | None = NOT_ENCRYPTED) -> SourceState:
    return SourceState(tuple(snaps), local, encryption)


def target(*snaps: Snap, exists: bool = True, written: int | None = 0,
           token: str | None = None) -> TargetState:
    return TargetState(exists, tuple(snaps), written, token)


MISSING = TargetState(False)
