"""Reading and writing one setting on a host, per layer, through a Runner.

Each layer has `read` (what the host has now, with what is needed to put it
back) and `write`. The commands and the reading of their output are pure
(apps.tuning.core.commands; PostgreSQL settings' apps.remote.alter_system); this module
is what runs them on the host.
"""

from __future__ import annotations

from apps.remote import alter_system
from apps.remote import commands as c
from apps.remote.cluster import ClusterTarget
from apps.remote.shell import Runner
from apps.tuning.core import commands

# ---- ZFS dataset properties ----------------------------------------------------

def read_zfs(run: Runner, dataset: str, prop: str) -> dict:
    return commands.parse_zfs_get(run(commands.zfs_get(dataset, prop)).stdout)


def write_zfs(run: Runner, dataset: str, prop: str, value: str) -> None:
    run(commands.zfs_set(dataset, prop, value))


def reset_zfs(run: Runner, dataset: str, prop: str) -> None:
    """Back to inherited: how a property that was never set locally is restored."""
    run(commands.zfs_inherit(dataset, prop))


# ---- sysctls ---------------------------------------------------------------------

def read_sysctl(run: Runner, name: str) -> dict:
    names = commands.sysctl_names(name)
    return commands.parse_sysctl(names, run(commands.sysctl_read(names)).stdout)


def write_sysctl(run: Runner, name: str, value: str) -> None:
    run(commands.sysctl_write(name, value))


def persist_sysctl(run: Runner, name: str, value: str | None) -> None:
    """Keep PoZoL's sysctls in one file of its own; None removes the line."""
    _persist(run, commands.sysctl_persist(name, value))


# ---- ZFS module parameters -----------------------------------------------------

def read_module(run: Runner, name: str) -> dict:
    """The parameter as the module shows it; for zfs_arc_max also the ceiling the ARC
    really has (arcstats c_max): the parameter may read 0 or a value OpenZFS ignored,
    and a rollback restores the ceiling, not the parameter's text (see rollback.py)."""
    before = {"value": run(commands.module_read(name)).stdout.strip()}
    if name == commands.ARC_MAX:
        ceiling = read_arc_c_max(run)
        if ceiling is not None:
            before["arc_c_max"] = str(ceiling)
    return before


def read_arc_c_max(run: Runner) -> int | None:
    """arcstats c_max, the ARC's ceiling in force; None where the kstat cannot be read."""
    result = run(commands.arcstats_read(), check=False)
    return commands.parse_arc_c_max(result.stdout) if result.ok else None


def write_module(run: Runner, name: str, value: str) -> None:
    run(commands.module_write(name, value))


def persist_module(run: Runner, name: str, value: str | None) -> None:
    _persist(run, commands.module_persist(name, value))


# ---- PostgreSQL settings -----------------------------------------------------------

def read_pg(run: Runner, cluster: ClusterTarget, name: str) -> dict:
    name = c.pg_setting_name(name)
    row = alter_system.parse([name], run(alter_system.read(cluster, [name])).stdout)[name]
    shown = run(alter_system.show(cluster, name)).stdout.strip()
    return {"value": shown, **row}


def write_pg(run: Runner, cluster: ClusterTarget, name: str, value: str) -> None:
    run(alter_system.write(cluster, {name: value}))


def reset_pg(run: Runner, cluster: ClusterTarget, name: str) -> None:
    """Remove PoZoL's ALTER SYSTEM line: the setting falls back to postgresql.conf."""
    run(alter_system.write(cluster, {name: None}))


def _persist(run: Runner, persist: commands.Persist) -> None:
    command, stdin = persist
    run(command, stdin=stdin)
