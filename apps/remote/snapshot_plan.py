"""How a snapshot is taken, and why: pure, from dataset names and what the host's ZFS can do.

The one decision the snapshot engine (apps/snapshots) follows and the advisor
(apps/tuning/core, rule data_wal_different_pools) reports: it lives here, below
both, so neither imports the other and they cannot disagree.

A PostgreSQL cluster's snapshot must be crash-consistent across its data and
WAL datasets, which two separate `zfs snapshot` calls are not. In order of
preference:

1. `single`: the WAL lives inside the data dataset (or a plain dataset):
   one snapshot is atomic by itself.
2. `recursive`: `zfs snapshot -r parent@name`, atomic on every dialect, when
   data and WAL sit under one parent AND nothing else does. `-r` snapshots
   every descendant of the parent: a sibling dataset (another cluster, a
   clone made under it) would get a snapshot it never asked for, so then this
   method is not used. The parent itself gets a snapshot too (it holds no
   data of the cluster; it is recorded like the others).
3. `multi`: `zfs snapshot data@name wal@name`, one atomic command, where the
   host's ZFS accepts several names (OpenZFS; zfs-fuse refuses it) and both
   are in one pool: ZFS makes several snapshots atomically only within a pool.
4. `backup`: data then WAL, each its own snapshot, between pg_backup_start and
   pg_backup_stop in one psql session. The backup_label pg_backup_stop returns
   is logged: a restore from these snapshots needs it in the data directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SINGLE, RECURSIVE, MULTI, BACKUP = "single", "recursive", "multi", "backup"


@dataclass(frozen=True)
class SnapshotPlan:
    method: str
    reason: str
    datasets: tuple[str, ...]  # the datasets whose snapshot was asked for
    root: str | None = None  # for `recursive`: the parent given to -r
    covered: tuple[str, ...] = field(default=())  # every dataset that gets a snapshot

    def names(self, snapshot: str) -> list[str]:
        """The full names the command is given (`root@s` for -r)."""
        if self.method == RECURSIVE:
            return [f"{self.root}@{snapshot}"]
        return [f"{name}@{snapshot}" for name in self.datasets]


def for_dataset(name: str) -> SnapshotPlan:
    return SnapshotPlan(SINGLE, "one dataset: one snapshot is atomic", (name,), covered=(name,))


def for_cluster(data: str, wal: str | None, host_datasets: list[str], *,
                multi_snapshot: bool) -> SnapshotPlan:
    """The method for a cluster whose data (and WAL, if separate) live on these datasets."""
    if not wal or wal == data:
        return SnapshotPlan(SINGLE, f"the WAL is inside {data}: one snapshot is atomic",
                            (data,), covered=(data,))
    root = common_parent(data, wal)
    if root is not None:
        below = [name for name in host_datasets if _within(name, root)]
        others = [name for name in below
                  if not (_within(name, data) or _within(name, wal) or _above(name, data)
                          or _above(name, wal))]
        if not others:
            return SnapshotPlan(
                RECURSIVE, f"data and WAL sit alone under {root}: one atomic "
                           f"`zfs snapshot -r {root}@…`", (data, wal), root=root,
                covered=tuple(sorted(below)))
        extra = ", ".join(sorted(others)[:3])
        why = f"{root} also holds {extra}, which `zfs snapshot -r` would snapshot too"
    else:
        # One `zfs snapshot` naming two pools is two transaction groups: not atomic.
        return SnapshotPlan(BACKUP, "data and WAL are on different pools, and ZFS snapshots "
                                    "several datasets atomically only within one pool: the "
                                    "snapshots are taken between pg_backup_start and "
                                    "pg_backup_stop", (data, wal), covered=(data, wal))
    if multi_snapshot:
        return SnapshotPlan(MULTI, f"{why}; the host's ZFS takes several snapshots in one "
                                   "atomic command", (data, wal), covered=(data, wal))
    return SnapshotPlan(BACKUP, f"{why}, and the host's ZFS takes one snapshot per command "
                                "(zfs-fuse): the snapshots are taken between "
                                "pg_backup_start and pg_backup_stop", (data, wal),
                        covered=(data, wal))


def common_parent(first: str, second: str) -> str | None:
    """The deepest dataset both are within (one may be the other's parent); None across pools."""
    a, b = first.split("/"), second.split("/")
    shared = []
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        shared.append(x)
    return "/".join(shared) if shared else None


def _within(name: str, root: str) -> bool:
    return name == root or name.startswith(root + "/")


def _above(name: str, child: str) -> bool:
    """name is an ancestor of child (an intermediate dataset between root and child)."""
    return child.startswith(name + "/")
