"""The one thing an experiment varies (and the settings it holds), per layer: read what the
host has, write a value, put the host back. The writing is apps.tuning.appliers'."""

from __future__ import annotations

from apps.remote import commands as c
from apps.remote.cluster import ClusterTarget
from apps.remote.shell import Runner
from apps.tuning import appliers
from apps.tuning.core import commands as tuning_commands
from apps.tuning.core.profiles import SYSCTL_COUNTERPART


def validate(layer: str, key: str, value: str) -> str:
    """The value, or InvalidValue: checked the way the writer will quote it."""
    if layer == "postgres":
        c.pg_setting_name(key)
        # Values worth comparing are words, numbers and sizes (off, fdatasync, 128MB).
        return tuning_commands.plain(tuning_commands.pg_value(value))
    if layer == "zfs":
        c.zfs_property(key)
        # Property values worth comparing are words and sizes (16K, zstd-3, disabled).
        return tuning_commands.plain(c.zfs_property_value(value))
    if layer == "sysctl":
        c.sysctl_name(key)
        tuning_commands.plain(sysctl_assignment(key, value)[1])
        return str(value)
    if layer == "module":
        c.module_param_name(key)
        return tuning_commands.plain(value)
    raise c.InvalidValue("layer", layer, "postgres, zfs, sysctl or module")


def sysctl_assignment(key: str, value: str) -> tuple[str, str]:
    """A sysctl value may name the pair's other member ("vm.dirty_ratio=20" for a
    vm.dirty_bytes experiment): the kernel keeps one member of the pair."""
    name, sep, rest = str(value).partition("=")
    if sep and name in {key, SYSCTL_COUNTERPART.get(key)}:
        return name, rest
    if sep:
        raise c.InvalidValue("sysctl value", value, f"NAME=VALUE names {key} or its pair")
    return key, str(value)


def read(run: Runner, cluster: ClusterTarget, layer: str, key: str, target: str) -> dict:
    if layer == "postgres":
        return appliers.read_pg(run, cluster, key)
    if layer == "zfs":
        return appliers.read_zfs(run, target, key)
    if layer == "sysctl":
        return appliers.read_sysctl(run, key)
    return appliers.read_module(run, key)


def write(run: Runner, cluster: ClusterTarget, layer: str, key: str, target: str,
          value: str) -> None:
    if layer == "postgres":
        appliers.write_pg(run, cluster, key, value)
    elif layer == "zfs":
        appliers.write_zfs(run, target, key, value)
    elif layer == "sysctl":
        appliers.write_sysctl(run, *sysctl_assignment(key, value))
    else:
        appliers.write_module(run, key, value)


def restore(run: Runner, cluster: ClusterTarget, layer: str, key: str, target: str,
            before: dict) -> None:
    """Back to what `read` found: a setting that was not set locally is reset, not pinned."""
    if layer == "postgres":
        if before.get("from_auto_conf"):
            appliers.write_pg(run, cluster, key, before["value"])
        else:
            appliers.reset_pg(run, cluster, key)
    elif layer == "zfs":
        if before.get("source") == "local":
            appliers.write_zfs(run, target, key, before["value"])
        else:
            appliers.reset_zfs(run, target, key)
    elif layer == "sysctl":
        partner = before.get("partner")
        if before["value"] == "0" and partner:  # the pair's other member was in force
            appliers.write_sysctl(run, partner["name"], partner["value"])
        else:
            appliers.write_sysctl(run, key, before["value"])
    else:
        appliers.write_module(run, key, before["value"])


def pending_restart(run: Runner, cluster: ClusterTarget, layer: str, key: str) -> bool:
    return layer == "postgres" and appliers.read_pg(run, cluster, key)["pending_restart"]
