"""What to sample on one host, decided from its discovered facts.

Discovery (apps.remote.gather) already knows the host's ZFS dialect, its
pools and its PostgreSQL clusters; sampling asks only for what that host can
answer, in the form its tools accept:

- zfs-fuse (pool version 23) knows neither `zpool list -p` nor the
  `fragmentation` column, nor the `logicalused` property (captured on the test
  host: "invalid option 'p'", "bad property list: invalid property
  'logicalused'"), and its `zfs get` has no `-t`;
- `zpool status -p` (exact error counts) arrived in OpenZFS 0.8.0, a release
  after `zpool list -p` (0.7.0), together with `zfs version` (usage texts of
  cmd/zpool/zpool_main.c at zfs-0.7.0 and zfs-0.8.0): discovery's
  `version_command` capability tells it;
- each cluster is reached as its owner through apps.remote.cluster, and its
  statistics views depend on its server version (apps.telemetry.core.pgstats).

Every name taken from facts passes apps.remote.commands' validators here, so a
host whose discovery reported a hostile name is sampled without that name and
says why (`skipped`), never with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.remote.cluster import ClusterTarget
from apps.remote.commands import InvalidValue, pool_name
from apps.remote.facts.host import Cluster, HostFacts
from apps.remote.facts.zfs import ZFS_FUSE

# pg_stat_activity.backend_type and pg_current_wal_lsn() arrived in PostgreSQL 10.
MIN_SERVER_VERSION = 100000


@dataclass(frozen=True)
class ClusterSpec:
    key: str  # the cluster's data directory: what identifies it across discoveries
    target: ClusterTarget
    server_version_num: int


@dataclass(frozen=True)
class SampleSpec:
    zfs: bool
    zpool_parsable: bool  # `zpool list -p`
    zpool_status_parsable: bool  # `zpool status -p`
    zpool_fragmentation: bool
    logicalused: bool
    zfs_get_types: bool  # `zfs get -t filesystem,volume`
    pools: tuple[str, ...] = ()
    clusters: tuple[ClusterSpec, ...] = ()
    skipped: tuple[str, ...] = ()  # what was left out, and why, in words


def spec_from_facts(facts: HostFacts) -> SampleSpec:
    skipped: list[str] = []
    pools = tuple(name for name in (p.name for p in facts.pools)
                  if _valid_pool(name, skipped))
    clusters = tuple(spec for spec in (_cluster_spec(c, skipped) for c in facts.clusters)
                     if spec is not None)
    zfs = facts.zfs
    if zfs is None:
        return SampleSpec(zfs=False, zpool_parsable=False, zpool_status_parsable=False,
                          zpool_fragmentation=False,
                          logicalused=False, zfs_get_types=False, clusters=clusters,
                          skipped=tuple(skipped))
    fuse = zfs.dialect == ZFS_FUSE
    return SampleSpec(
        zfs=True,
        zpool_parsable=zfs.capabilities.zpool_list_parsable,
        zpool_status_parsable=zfs.capabilities.version_command,
        zpool_fragmentation=zfs.capabilities.zpool_fragmentation,
        logicalused=not fuse,
        zfs_get_types=not fuse,
        pools=pools,
        clusters=clusters,
        skipped=tuple(skipped),
    )


def _valid_pool(name: str, skipped: list[str]) -> bool:
    try:
        pool_name(name)
    except InvalidValue as error:
        skipped.append(f"pool {name!r}: {error.reason}")
        return False
    return True


def _cluster_spec(cluster: Cluster, skipped: list[str]) -> ClusterSpec | None:
    where = f"cluster {cluster.data_dir!r}"
    if cluster.server_version_num is None:
        skipped.append(f"{where}: server version unknown (psql failed at discovery)")
        return None
    if cluster.server_version_num < MIN_SERVER_VERSION:
        skipped.append(f"{where}: PostgreSQL older than 10 is not sampled")
        return None
    try:  # a value discovery could not read (None) is refused like a hostile one
        target = ClusterTarget.of(owner=cluster.owner, bin_dir=cluster.bin_dir,
                                  socket_dir=cluster.socket_dir, port=cluster.port)
    except InvalidValue as error:
        skipped.append(f"{where}: {error.kind}: {error.reason}")
        return None
    return ClusterSpec(cluster.data_dir, target, cluster.server_version_num)
