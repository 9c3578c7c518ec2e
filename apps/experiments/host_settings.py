"""The one thing an experiment varies (and the settings it holds), per layer, on the host:
read what the host has, write a value, put the host back. The writing is
apps.tuning.appliers'; which values may be written is core/knobs.py's."""

from __future__ import annotations

from apps.experiments.core.knobs import sysctl_assignment
from apps.remote.cluster import ClusterTarget
from apps.remote.shell import Runner
from apps.tuning import appliers


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
