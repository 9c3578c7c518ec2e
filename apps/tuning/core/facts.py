"""Readers over the facts dict that `discover(...).to_dict()` produces.

Every rule and plan reads facts through these, so a change in the facts'
shape is absorbed in one place. All readers tolerate missing keys: facts from
older captures, or from hosts where a probe failed, simply lack them.
"""

from __future__ import annotations

import re

from apps.remote.facts.postgres import setting_row
from apps.remote.facts.zfs import version_tuple
from apps.remote.sizes import unit_bytes

ROLES = ("data", "wal", "other")
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
_VIRTUAL_DISKS = ("zram", "loop", "ram", "sr")


def datasets(facts: dict) -> dict[str, dict]:
    return {d["name"]: d for d in facts.get("datasets") or []}


def prop(dataset: dict | None, name: str) -> str | None:
    """A property's value; None when the host has no such property or it is "-"."""
    if not dataset:
        return None
    return ((dataset.get("properties") or {}).get(name) or {}).get("value")


def prop_source(dataset: dict | None, name: str) -> str | None:
    return (((dataset or {}).get("properties") or {}).get(name) or {}).get("source")


def pools(facts: dict) -> dict[str, dict]:
    return {p["name"]: p for p in facts.get("pools") or []}


def pool_of(dataset_name: str) -> str:
    return dataset_name.split("/", 1)[0]


def clusters(facts: dict) -> list[dict]:
    return list(facts.get("clusters") or [])


def setting(cluster: dict | None, name: str) -> dict | None:
    return setting_row((cluster or {}).get("settings") or [], name)


def setting_value(cluster: dict | None, name: str) -> str | None:
    row = setting(cluster, name)
    return row["setting"] if row else None


def setting_bytes(cluster: dict | None, name: str) -> int | None:
    """A memory setting in bytes: pg_settings counts it in its unit (shared_buffers in 8kB)."""
    row = setting(cluster, name)
    size = unit_bytes(row.get("unit")) if row else None
    if row is None or size is None or not row["setting"].lstrip("-").isdigit():
        return None
    return int(row["setting"]) * size


def pg_major(cluster: dict) -> int | None:
    """10, 15, 16 ... from server_version_num (160004 -> 16), else from version."""
    number = cluster.get("server_version_num")
    if number:
        return number // 10000 if number >= 100000 else number // 100  # 9.6 is 90600
    version = _VERSION.match(cluster.get("version") or "")
    return int(version[1]) if version else None


def roles(facts: dict, cluster: dict) -> dict[str, list[str]]:
    """Dataset names per role for one cluster.

    "data" is the data directory's dataset; "wal" the pg_wal dataset when it is a
    different one; "other" the datasets nested under the data dataset (tablespaces
    mounted inside it, for example), which share the cluster's workload.
    """
    data, wal = cluster.get("data_dataset"), cluster.get("wal_dataset")
    found: dict[str, list[str]] = {role: [] for role in ROLES}
    if data:
        found["data"].append(data)
        found["other"] = [name for name, d in datasets(facts).items()
                          if name.startswith(data + "/") and name != wal
                          and d.get("type") == "filesystem"]
    if wal and wal != data:
        found["wal"].append(wal)
    return found


def pg_datasets(facts: dict) -> list[tuple[dict, str, str]]:
    """(cluster, role, dataset name) for every dataset holding a cluster's files."""
    return [(cluster, role, name) for cluster in clusters(facts)
            for role, names in roles(facts, cluster).items() for name in names]


def zfs_version(facts: dict) -> tuple[int, int, int] | None:
    """The kernel module's version: it decides bugs and tunables (userland may differ)."""
    zfs = facts.get("zfs") or {}
    return version_tuple(zfs.get("kernel_version") or zfs.get("version"))


def capabilities(facts: dict) -> dict:
    return (facts.get("zfs") or {}).get("capabilities") or {}


def module_param(facts: dict, name: str) -> str | None:
    return (facts.get("module_params") or {}).get(name)


def sysctl(facts: dict, name: str) -> int | None:
    value = (facts.get("sysctls") or {}).get(name)
    return int(value) if isinstance(value, int) or str(value).isdigit() else None


def arc_max(facts: dict) -> int | None:
    """The ARC ceiling in force: zfs_arc_max when set (0 means auto), else arcstats c_max."""
    param = module_param(facts, "zfs_arc_max")
    if param and param.isdigit() and int(param) > 0:
        return int(param)
    return ((facts.get("arcstats") or {}).get("c_max")) or None


def physical_disks(facts: dict) -> list[dict]:
    return [d for d in facts.get("disks") or []
            if d.get("type") == "disk" and (d.get("size") or 0) > 0
            and not d["name"].startswith(_VIRTUAL_DISKS)]


def disk_kind(facts: dict, cluster: dict | None = None) -> str:
    """"hdd", "ssd" or "nvme" for the storage under the cluster's data.

    Disks are matched to the data pool's vdevs by name or by the model in a
    /dev/disk/by-id name; when nothing matches (file vdevs, unknown naming) all
    physical disks count. The slowest kind wins: it sets the pace of a flush.
    """
    disks = _pool_disks(facts, cluster) or physical_disks(facts)
    if any(d.get("rotational") for d in disks):
        return "hdd"
    if disks and all(d.get("transport") == "nvme" for d in disks):
        return "nvme"
    return "ssd"


def _pool_disks(facts: dict, cluster: dict | None) -> list[dict]:
    data = (cluster or {}).get("data_dataset")
    pool = pools(facts).get(pool_of(data)) if data else None
    if not pool:
        return []
    leaves = [leaf for vdev in pool.get("vdevs") or [] for leaf in _leaves(vdev)]
    return [d for d in physical_disks(facts) if any(_names_disk(leaf, d) for leaf in leaves)]


def _leaves(vdev: dict) -> list[str]:
    children = vdev.get("children") or []
    if not children:
        return [vdev["name"]]
    return [leaf for child in children for leaf in _leaves(child)]


def _names_disk(leaf: str, disk: dict) -> bool:
    name = leaf.rsplit("/", 1)[-1]
    model = (disk.get("model") or "").replace(" ", "_")
    return name == disk["name"] or name.startswith(disk["name"] + "p") or (
        bool(model) and model in name)
