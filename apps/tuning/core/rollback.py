"""Rolling a change back: what to write, and what the host has until then.

Pure: from what the apply step recorded for one change (`before`, read just
before writing, and `after`, read back), never from discovery, which may
predate a failed apply.

The kernel keeps one member of each vm.dirty_* pair: writing vm.dirty_bytes
zeroes vm.dirty_ratio and the other way round. A change that moved a pair from
its ratio to its bytes is undone by writing the ratio back, and until then the
ratio reads 0, whatever the bytes read.

zfs_arc_max cannot be put back by writing its old text when that text was 0
("automatic"): a running OpenZFS ignores 0. Checked in the OpenZFS source
(zfs-2.1.11 to 2.4.x, github.com/openzfs/zfs): module/os/linux/zfs/arc_os.c
param_set_arc_max() stores the value and calls arc_tuning_update() in
module/zfs/arc.c, which changes arc_c_max only `if ((zfs_arc_max) && ...)`
and the value is at least 64 MiB, below all memory and above arc_c_min; 0 is
skipped without a warning, so c_max keeps the last value until an explicit
one is written or the module is loaded again (zfs(4): "It cannot be set back
to 0 while running"). The apply step therefore records arcstats c_max with
the parameter, and a rollback writes that ceiling back: the effective size
is restored now, and removing the modprobe.d line PoZoL wrote gives automatic
sizing back at the next boot (unless another modprobe.d file sets it). The
parameter then reads the number, not 0: that is the honest state of a
running module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Undo:
    key: str  # the change's key, or its vm.dirty_* partner's
    current: str | None  # what the host reads for `key` now; None when not known
    desired: str  # the value to restore
    action: str  # "set": write desired; "reset": restore what was inherited or default
    note: str = ""  # what the restore can and cannot bring back, for the plan and the log


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
    if layer == "module" and key == ARC_MAX:
        return _undo_arc_max(before, after)
    partner = before.get("partner")
    if partner and desired == "0" and partner["value"] != "0":
        return Undo(partner["name"], _zeroed_partner(after), partner["value"], "reset")
    return Undo(key, after, desired, "reset")


ARC_MAX = "zfs_arc_max"
NEXT_BOOT = ("the zfs_arc_max line leaves /etc/modprobe.d/zfs.conf, so the next boot sizes"
             " the ARC automatically unless another file in /etc/modprobe.d sets it")


def _undo_arc_max(before: dict, after: str | None) -> Undo:
    """The ceiling the ARC had (arcstats c_max), written back explicitly; 0 only when the
    ceiling was not recorded (applied before PoZoL read it), and then said to do nothing."""
    ceiling = before.get("arc_c_max")
    if ceiling:
        why = ", because a running OpenZFS ignores 0" if before["value"] == "0" else ""
        return Undo(ARC_MAX, after, ceiling, "reset", (
            f"restores the ARC's previous effective size now: writes {ceiling} (arcstats"
            f" c_max before the change; zfs_arc_max read {before['value']}){why};"
            f" {NEXT_BOOT}"))
    if before["value"] == "0":
        return Undo(ARC_MAX, after, "0", "reset", (
            "writing 0 does not restore automatic sizing on a running OpenZFS: the ARC"
            " keeps its current ceiling until the next boot, and the ceiling it had before"
            f" was not recorded (write it to /sys/module/zfs/parameters/{ARC_MAX} to"
            f" restore it now); {NEXT_BOOT}"))
    return Undo(ARC_MAX, after, before["value"], "reset", NEXT_BOOT)


def _zeroed_partner(after: str | None) -> str | None:
    """The partner's value once `key` was written: 0 if the write took, else unknown."""
    if after is None:
        return None
    return "0" if after.strip() not in ("", "0") else None
