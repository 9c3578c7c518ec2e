"""The shape of what discovery learns about a host: plain, JSON-ready data.

`HostFacts.to_dict()` is what the control plane stores; every field is built
by apps.remote.gather from the parsers beside this module.
`HostFacts.from_dict()` turns what was stored back into these types: the one
way tuning and the advisor get typed facts.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from apps.remote.decode import decode
from apps.remote.facts import arc, postgres, system, zfs, zpool
from apps.remote.facts.bloat import ClusterBloat
from apps.remote.facts.numbers import is_digits
from apps.remote.sudo import SudoCheck


@dataclass(frozen=True)
class Skipped:
    kind: str
    value: str
    reason: str


@dataclass
class ZfsFacts:
    implementation: str  # "OpenZFS" or "zfs-fuse"
    dialect: str  # zfs.OPENZFS or zfs.ZFS_FUSE
    version: str | None  # the kernel module's when known: it decides kstats and tunables
    userland_version: str | None
    kernel_version: str | None
    capabilities: zfs.Capabilities


@dataclass
class Pool:
    name: str
    health: str
    size: int | None
    allocated: int | None
    free: int | None
    fragmentation: int | None
    capacity: int | None
    ashift: int | None  # None also when the pool reports 0 (auto-detected per vdev)
    spa_version: str | None  # "23" on zfs-fuse; None with feature flags
    exact_sizes: bool
    vdevs: list[zpool.Vdev] = field(default_factory=list)
    logs: list[zpool.Vdev] = field(default_factory=list)
    cache: list[zpool.Vdev] = field(default_factory=list)
    spares: list[zpool.Vdev] = field(default_factory=list)
    has_log: bool = False
    has_cache: bool = False
    last_scrub: str | None = None  # ISO, host's local time; None: never, or not known
    autotrim: str | None = None  # "on" / "off"; None where the ZFS has no such property
    # The feature's state: "disabled", "enabled" or "active" (clones of blocks exist);
    # None where the ZFS has no such feature (before OpenZFS 2.2, zfs-fuse).
    block_cloning: str | None = None


@dataclass
class Dataset:
    name: str
    type: str
    mountpoint: str | None
    used: int | None
    avail: int | None
    refer: int | None
    exact_sizes: bool
    compressratio: float | None  # parsed: zfs-fuse prints "3.95x" even with -p
    properties: dict[str, zfs.PropertyValue] = field(default_factory=dict)
    # Space only this dataset's snapshots hold (freed if they were all destroyed).
    usedbysnapshots: int | None = None


@dataclass
class Disk:
    name: str
    type: str
    size: int | None
    rotational: bool | None
    model: str | None
    transport: str | None
    parent: str | None
    write_cache: str | None = None  # kernel's view: "write back" / "write through"
    volatile_write_cache: bool | None = None  # the NVMe controller's own answer


@dataclass
class Cluster:
    pid: int
    version: str | None
    server_version_num: int | None
    port: int | None
    data_dir: str
    wal_dir: str | None
    socket_dir: str | None
    bin_dir: str | None
    owner: str | None
    data_checksums: bool | None
    data_dataset: str | None = None
    wal_dataset: str | None = None
    settings: list[postgres.Setting] = field(default_factory=list)
    error: str | None = None
    stats: postgres.ServerStats | None = None  # standbys, slots, checkpoints; None: unknown
    bloat: ClusterBloat | None = None  # dead tuples of the largest databases; None: unknown
    # Where its configuration lives (pg_settings): outside the data directory in Debian's
    # packaged layout, /etc/postgresql/<major>/<name>/.
    config_file: str | None = None
    hba_file: str | None = None
    ident_file: str | None = None
    packaged: str | None = None  # "<major>/<name>" of postgresql-common's layout
    systemd_unit: str | None = None  # "postgresql@17-main.service" when systemd runs it
    pg_ctlcluster: bool = False  # postgresql-common manages it (pg_ctlcluster, start.conf)


@dataclass
class Installed:
    """PostgreSQL as packaged on the host, whether a cluster of it runs or not: what a
    new cluster can be made with (apps.provisioning)."""

    # Major ("17") -> the directory of its binaries.
    bin_dirs: dict[str, str] = field(default_factory=dict)
    pg_ctlcluster: bool = False  # postgresql-common is installed
    # postgresql-common's clusters ("17/main"), running or not.
    packaged: list[str] = field(default_factory=list)


# The OS user Debian's and the PGDG's packages run PostgreSQL as.
PACKAGES_OWNER = "postgres"
_MAJOR = re.compile(r"(\d+)")


@dataclass
class HostFacts:
    os: system.OsRelease
    kernel: str
    arch: str
    cpus: int | None
    mem_total: int | None
    mem_dirty: int | None
    mem_writeback: int | None
    sysctls: dict[str, int | str]
    has_systemd: bool
    tools: dict[str, str]
    # Transparent huge pages in force ("always", "madvise", "never"); None: not known.
    thp_enabled: str | None = None
    thp_defrag: str | None = None
    zfs: ZfsFacts | None = None
    zfs_absent_reason: str | None = None
    pools: list[Pool] = field(default_factory=list)
    datasets: list[Dataset] = field(default_factory=list)
    arcstats: arc.ArcSummary | None = None
    module_params: dict[str, str] | None = None
    disks: list[Disk] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    # None: not asked (facts from before discovery asked).
    installed: Installed | None = None
    # Data directories of postmasters running on a dataset PoZoL made for a clone (its
    # CLONE_PROPERTY set): PoZoL's own copies, never clusters of the host.
    clones: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # A login other than root: which of PoZoL's sudoers rules it lacks. None: root.
    sudo: SudoCheck | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> HostFacts:
        """The facts `to_dict()` stored (as JSON or not), typed again.

        Stored facts may come from an older discovery, or from a host where a
        probe failed: a missing (or null) field takes its default, an empty
        list or dict, or None ("not known here"), which every reader treats as
        unknown. Keys no field names are ignored (apps.remote.decode).
        """
        return decode(cls, data)

    def skip(self, kind: str, value: object, reason: str) -> None:
        self.skipped.append(Skipped(kind, str(value), reason))

    def majors(self) -> dict[int, tuple[str, str]]:
        """Each PostgreSQL major the host can run a cluster of: (bin_dir, owner).

        A major a discovered cluster runs takes that cluster's binaries and owner; one
        that is installed from packages with no cluster running takes the packaged
        binaries and the owner of the host's other clusters, else `postgres` (the
        packages' user). New clusters are made with these (apps.provisioning), and a
        sudo login's rules name them before the first such cluster exists."""
        found: dict[int, tuple[str, str]] = {}
        for cluster in self.clusters:
            match = _MAJOR.match(cluster.version or "")
            if match and cluster.bin_dir and cluster.owner:
                found.setdefault(int(match.group(1)), (cluster.bin_dir, cluster.owner))
        owner = next((c.owner for c in self.clusters if c.owner), PACKAGES_OWNER)
        for major, bin_dir in (self.installed.bin_dirs if self.installed else {}).items():
            found.setdefault(int(major), (bin_dir, owner))
        return found


# PoZoL sets it on every dataset it makes for a clone (clones, restore drills, table
# recoveries: apps/clones/core/commands.py), with the clone's name as its value.
CLONE_PROPERTY = "pozol:clone"


def split_clones(clusters: list[Cluster], datasets: list[Dataset]
                 ) -> tuple[list[Cluster], list[str]]:
    """The host's own clusters, and the data directories of those whose data dataset
    is a PoZoL clone's. A cluster on no known dataset is the host's."""
    marked = {d.name for d in datasets
              if (prop := d.properties.get(CLONE_PROPERTY)) and prop.value}
    own = [c for c in clusters if c.data_dataset not in marked]
    return own, [c.data_dir for c in clusters if c.data_dataset in marked]


def pool_from(row: zpool.PoolRow, status: zpool.PoolStatus | None, ashift: str | None,
              spa: str | None, autotrim: str | None = None,
              block_cloning: str | None = None) -> Pool:
    """A Pool from its `zpool list` row, `zpool status` tree and `zpool get` values."""
    status = status or zpool.PoolStatus(row.name, row.health)
    return Pool(
        name=row.name, health=row.health, size=row.size, allocated=row.allocated,
        free=row.free, fragmentation=row.fragmentation, capacity=row.capacity,
        ashift=int(ashift) if ashift and is_digits(ashift) and ashift != "0" else None,
        spa_version=spa if spa and is_digits(spa) else None,
        exact_sizes=row.exact, vdevs=status.vdevs, logs=status.logs, cache=status.cache,
        spares=status.spares, has_log=status.has_log, has_cache=status.has_cache,
        last_scrub=status.last_scrub, autotrim=autotrim if autotrim in ("on", "off") else None,
        block_cloning=block_cloning if block_cloning in zpool.FEATURE_STATES else None,
    )


def dataset_from(row: zfs.DatasetRow, props: dict[str, zfs.PropertyValue]) -> Dataset:
    ratio = props.get("compressratio")
    by_snapshots = props.get("usedbysnapshots")
    return Dataset(
        row.name, row.type, row.mountpoint, row.used, row.avail, row.refer, row.exact,
        compressratio=zfs.parse_ratio(ratio.value) if ratio else None,
        properties=props,
        usedbysnapshots=zfs.parse_size(by_snapshots.value or "-")[0] if by_snapshots else None,
    )
