"""What may never be destroyed, decided in one place for the API, the UI and the step.

The service checks the inventory before an operation starts (a clear 4xx);
the step checks again against a listing taken just before `zfs destroy`,
because a hold or a clone may have appeared meanwhile. ZFS itself refuses a
held snapshot ("dataset is busy") and one with clones (without -R, which PoZoL
never passes): these guards say so first, in words.
"""

from __future__ import annotations

from dataclasses import dataclass

HELD, HAS_CLONES, NOT_OURS, PROTECTED = "held", "has_clones", "not_ours", "protected"


@dataclass(frozen=True)
class Refusal:
    code: str
    message: str


def destroy_refusal(*, full_name: str, userrefs: int, clones: list[str] | tuple[str, ...],
                    origin: str, force: bool,
                    protected: dict[str, str] | None = None) -> Refusal | None:
    """Why `full_name` may not be destroyed, or None.

    Held and cloned snapshots, and the ones `protected` names (full name -> why:
    a replication link's last common snapshot), are refused whatever `force`
    says (release the hold, destroy the clone first). A snapshot PoZoL did not make (made by
    hand, or received) is someone else's: destroyed only when forced.
    """
    if userrefs:
        return Refusal(HELD, f"{full_name} is held ({userrefs} hold"
                             f"{'s' if userrefs > 1 else ''}): release it first")
    if clones:
        return Refusal(HAS_CLONES, f"{full_name} has clones: {', '.join(clones)}")
    if protected and full_name in protected:
        return Refusal(PROTECTED, f"{full_name} is the {protected[full_name]}: replication "
                                  "would have to start over without it")
    if origin != "pozol" and not force:
        what = "was made by hand" if origin == "hand" else "was received"
        return Refusal(NOT_OURS, f"{full_name} {what}, not by PoZoL: pass force to destroy it")
    return None


NOT_A_PAIR, NEWER = "not_a_pair", "newer_snapshots"


def rollback_refusal(chosen, rows: dict, *, destroy_newer: bool,
                     protected: dict[str, str]) -> Refusal | None:
    """Why a cluster may not be rolled back as `chosen` (a core.rollback.RollbackPlan)
    plans it, or None. `rows` maps full names to snapshots (model rows or listed rows).

    The newer snapshots `zfs rollback -r` would destroy pass the destroy guards, as if
    forced: saying destroy_newer is the operator's yes for hand-made ones, never for a
    held, cloned or protected one.
    """
    if chosen.missing:
        return Refusal(NOT_A_PAIR, f"no snapshot of that name on {', '.join(chosen.missing)}: "
                                   "the data and the WAL would not be of one moment")
    if chosen.newer and not destroy_newer:
        shown = ", ".join(chosen.newer[:5]) + (" ..." if len(chosen.newer) > 5 else "")
        return Refusal(NEWER, f"rolling back destroys {len(chosen.newer)} newer snapshot"
                              f"{'s' if len(chosen.newer) > 1 else ''} ({shown}): say "
                              "destroy_newer to allow it")
    for full_name in chosen.newer:
        row = rows[full_name]
        refusal = destroy_refusal(full_name=full_name, userrefs=row.userrefs, clones=row.clones,
                                  origin=row.origin, force=True, protected=protected)
        if refusal:
            return Refusal(refusal.code, f"cannot destroy a newer snapshot: {refusal.message}")
    return None


POLICY_OWNS, IN_USE = "policy_owns", "in_use"


def cleanup_refusal(*, full_name: str, userrefs: int, clones: list[str] | tuple[str, ...],
                    origin: str, policy: str, manual: str,
                    protected: dict[str, str] | None = None,
                    used_by: str | None = None) -> Refusal | None:
    """Why a snapshot PoZoL took for something now gone (a clone's "now" snapshot) must
    stay, or None: every guard of a destroy (never forced), a policy that owns it (its
    `pozol:policy` is not `manual`), or `used_by` (what else of PoZoL's was made from
    it, such as a clone still being made)."""
    refusal = destroy_refusal(full_name=full_name, userrefs=userrefs, clones=clones,
                              origin=origin, force=False, protected=protected)
    if refusal:
        return refusal
    if policy and policy != manual:
        return Refusal(POLICY_OWNS, f"{full_name} belongs to policy {policy} now")
    if used_by:
        return Refusal(IN_USE, f"{full_name} is used by {used_by}")
    return None
