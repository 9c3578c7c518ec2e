"""What a value of the one thing an experiment varies (and of the settings it holds) may
be, per layer: checked the way apps.tuning.core.commands (and apps.remote.alter_system,
for PostgreSQL) quotes it when it is written.
Pure; reading and writing it on the host is apps.experiments.host_settings'."""

from __future__ import annotations

from apps.remote import alter_system
from apps.remote import commands as c
from apps.tuning.core import commands as tuning_commands
from apps.tuning.core.profiles import SYSCTL_COUNTERPART


def validate(layer: str, key: str, value: str) -> str:
    """The value, or InvalidValue: checked the way the writer will quote it."""
    if layer == "postgres":
        c.pg_setting_name(key)
        # Values worth comparing are words, numbers and sizes (off, fdatasync, 128MB).
        return tuning_commands.plain(alter_system.value(value))
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
