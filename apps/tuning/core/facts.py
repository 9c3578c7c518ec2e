"""Readers over HostFacts that carry domain knowledge: roles, units, versions, disk kinds.

Rules and plans read facts as typed attributes (HostFacts.from_dict turns
what discovery stored back into them); what needs more than an attribute
lives here, so it is decided once. Facts from older discoveries, or from
hosts where a probe failed, lack fields: those read as None or empty, and
every reader treats that as "not known".
"""

from __future__ import annotations

import re

from apps.common.sizes import unit_bytes
from apps.remote.commands import pool_of
from apps.remote.facts.host import Cluster, Dataset, Disk, HostFacts, Pool
from apps.remote.facts.numbers import is_digits
from apps.remote.facts.postgres import Setting, find_setting
from apps.remote.facts.zfs import Capabilities, version_tuple
from apps.remote.facts.zpool import Vdev

ROLES = ("data", "wal", "other")
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
_VIRTUAL_DISKS = ("zram", "loop", "ram", "sr")


def datasets(facts: HostFacts) -> dict[str, Dataset]:
    return {d.name: d for d in facts.datasets}


def pools(facts: HostFacts) -> dict[str, Pool]:
    return {p.name: p for p in facts.pools}


def prop(dataset: Dataset | None, name: str) -> str | None:
    """A property's value; None when the host has no such property or it is "-"."""
    found = dataset.properties.get(name) if dataset else None
    return found.value if found else None


def prop_source(dataset: Dataset | None, name: str) -> str | None:
    found = dataset.properties.get(name) if dataset else None
    return found.source if found else None


def setting(cluster: Cluster | None, name: str) -> Setting | None:
    return find_setting(cluster.settings, name) if cluster else None


def setting_value(cluster: Cluster | None, name: str) -> str | None:
    row = setting(cluster, name)
    return row.setting if row else None


def setting_bytes(cluster: Cluster | None, name: str) -> int | None:
    """A memory setting in bytes: pg_settings counts it in its unit (shared_buffers in 8kB)."""
    row = setting(cluster, name)
    size = unit_bytes(row.unit) if row else None
    if row is None or size is None or not is_digits(row.setting.lstrip("-")):
        return None
    return int(row.setting) * size


def pg_major(cluster: Cluster) -> int | None:
    """10, 15, 16 ... from server_version_num (160004 -> 16), else from version."""
    number = cluster.server_version_num
    if number:
        return number // 10000 if number >= 100000 else number // 100  # 9.6 is 90600
    version = _VERSION.match(cluster.version or "")
    return int(version[1]) if version else None


def roles(facts: HostFacts, cluster: Cluster) -> dict[str, list[str]]:
    """Dataset names per role for one cluster.

    "data" is the data directory's dataset; "wal" the pg_wal dataset when it is a
    different one; "other" the datasets nested under the data dataset (tablespaces
    mounted inside it, for example), which share the cluster's workload.
    """
    data, wal = cluster.data_dataset, cluster.wal_dataset
    found: dict[str, list[str]] = {role: [] for role in ROLES}
    if data:
        found["data"].append(data)
        found["other"] = [d.name for d in facts.datasets
                          if d.name.startswith(data + "/") and d.name != wal
                          and d.type == "filesystem"]
    if wal and wal != data:
        found["wal"].append(wal)
    return found


def pg_datasets(facts: HostFacts) -> list[tuple[Cluster, str, str]]:
    """(cluster, role, dataset name) for every dataset holding a cluster's files."""
    return [(cluster, role, name) for cluster in facts.clusters
            for role, names in roles(facts, cluster).items() for name in names]


def zfs_version(facts: HostFacts) -> tuple[int, int, int] | None:
    """The kernel module's version: it decides bugs and tunables (userland may differ)."""
    zfs = facts.zfs
    return version_tuple(zfs.kernel_version or zfs.version) if zfs else None


def capabilities(facts: HostFacts) -> Capabilities | None:
    """None when the host has no working ZFS; a capability itself is None when not known."""
    return facts.zfs.capabilities if facts.zfs else None


def module_param(facts: HostFacts, name: str) -> str | None:
    return (facts.module_params or {}).get(name)


def sysctl(facts: HostFacts, name: str) -> int | None:
    value = facts.sysctls.get(name)
    return int(value) if isinstance(value, int) or is_digits(str(value)) else None


def arc_max(facts: HostFacts) -> int | None:
    """The ARC ceiling in force: zfs_arc_max when set (0 means auto), else arcstats c_max."""
    param = module_param(facts, "zfs_arc_max")
    if param and is_digits(param) and int(param) > 0:
        return int(param)
    return (facts.arcstats.c_max if facts.arcstats else None) or None


def physical_disks(facts: HostFacts) -> list[Disk]:
    return [d for d in facts.disks
            if d.type == "disk" and (d.size or 0) > 0 and not d.name.startswith(_VIRTUAL_DISKS)]


def disk_kind(facts: HostFacts, cluster: Cluster | None = None) -> str:
    """"hdd", "ssd" or "nvme" for the storage under the cluster's data.

    Disks are matched to the data pool's vdevs by name or by the model in a
    /dev/disk/by-id name; when nothing matches (file vdevs, unknown naming) all
    physical disks count. The slowest kind wins: it sets the pace of a flush.
    """
    disks = _pool_disks(facts, cluster) or physical_disks(facts)
    if any(d.rotational for d in disks):
        return "hdd"
    if disks and all(d.transport == "nvme" for d in disks):
        return "nvme"
    return "ssd"


# Cloud block storage shows up as NVMe (or SCSI) with these models: a network volume
# whose throughput is provisioned, often 125-250 MiB/s, never local-NVMe speed.
CLOUD_VOLUME_MODELS = (
    "Amazon Elastic Block Store", "Google PersistentDisk", "Google EphemeralDisk",
    "Microsoft NVMe Direct Disk", "Virtual Disk", "Virtual disk", "QEMU HARDDISK",
    "BlockVolume", "Hyperdisk",
)


def storage_class(facts: HostFacts, cluster: Cluster | None = None) -> str:
    """disk_kind, or "cloud" when the disks are network volumes that merely look local.

    Only the drain-rate heuristic uses it: a cloud volume's model names it (EBS,
    Persistent Disk, Azure's NVMe disk, a virtual disk); anything else keeps its kind.
    """
    disks = _pool_disks(facts, cluster) or physical_disks(facts)
    if disks and any((d.model or "").startswith(CLOUD_VOLUME_MODELS) for d in disks):
        return "cloud"
    return disk_kind(facts, cluster)


def _pool_disks(facts: HostFacts, cluster: Cluster | None) -> list[Disk]:
    data = cluster.data_dataset if cluster else None
    pool = pools(facts).get(pool_of(data)) if data else None
    if not pool:
        return []
    leaves = [leaf for vdev in pool.vdevs for leaf in _leaves(vdev)]
    return [d for d in physical_disks(facts) if any(_names_disk(leaf, d) for leaf in leaves)]


def _leaves(vdev: Vdev) -> list[str]:
    if not vdev.children:
        return [vdev.name]
    return [leaf for child in vdev.children for leaf in _leaves(child)]


def _names_disk(leaf: str, disk: Disk) -> bool:
    name = leaf.rsplit("/", 1)[-1]
    model = (disk.model or "").replace(" ", "_")
    return name == disk.name or name.startswith(disk.name + "p") or (
        bool(model) and model in name)
