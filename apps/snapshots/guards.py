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
