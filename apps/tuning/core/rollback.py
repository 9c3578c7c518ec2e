"""Rolling a change back: what to write, and what the host has until then.

Pure: from what the apply step recorded for one change (`before`, read just
before writing, and `after`, read back), never from discovery, which may
predate a failed apply.

The kernel keeps one member of each vm.dirty_* pair: writing vm.dirty_bytes
zeroes vm.dirty_ratio and the other way round. A change that moved a pair from
its ratio to its bytes is undone by writing the ratio back, and until then the
ratio reads 0, whatever the bytes read.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Undo:
    key: str  # the change's key, or its vm.dirty_* partner's
    current: str | None  # what the host reads for `key` now; None when not known
    desired: str  # the value to restore
    action: str  # "set": write desired; "reset": restore what was inherited or default


def undo(layer: str, key: str, before: dict, after: str | None) -> Undo:
    """How to restore one change from its recorded before- and after-values."""
    desired = before["value"]
    if layer == "zfs":
        # inherited or default: inherit again rather than pin the old value locally
        action = "set" if before.get("source") in {"local", "received"} else "reset"
        return Undo(key, after, desired, action)
    if layer == "postgres":
        # from postgresql.conf or a default: drop PoZoL's ALTER SYSTEM line
        return Undo(key, after, desired, "set" if before.get("from_auto_conf") else "reset")
    # sysctls and module parameters: the old value live, and PoZoL's persisted line removed
    partner = before.get("partner")
    if partner and desired == "0" and partner["value"] != "0":
        return Undo(partner["name"], _zeroed_partner(after), partner["value"], "reset")
    return Undo(key, after, desired, "reset")


def _zeroed_partner(after: str | None) -> str | None:
    """The partner's value once `key` was written: 0 if the write took, else unknown."""
    if after is None:
        return None
    return "0" if after.strip() not in ("", "0") else None
