"""Plans: what applying a profile to a host would change, in a safe order.

A plan lists each value that differs (Change: layer, target, key, current,
desired, how it applies, risk), the advisor's findings around it, the settings
that need a restart and the risks still to be acknowledged. Pure: facts in,
plan out; the apply step executes a stored plan and re-reads facts to verify.

Decision: `changes` holds every difference in apply order, supported or not, so
one list is stored and shown ("lz4 -> on here", "no sync property here");
`unsupported` is the supported=False subset, for a summary. An executor runs
only supported changes. `empty` means apply has nothing to do, even when part
of the profile cannot be applied on this host (then `unsupported` says what).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from apps.remote.facts.host import HostFacts
from apps.tuning.core.advisor import RELATED, Finding, advise, advise_changes
from apps.tuning.core.changes import Change, compute_changes
from apps.tuning.core.profiles import ProfileSettings
from apps.tuning.core.winners import Winners

__all__ = ["Change", "Plan", "plan", "judge", "ORDER"]

# zfs first (online, reversible), then module parameters and sysctls, then the
# PostgreSQL settings that reload, and the restart last, once, with all of its.
ORDER = ("zfs", "module", "sysctl", "pg_reload", "pg_restart")


@dataclass(frozen=True)
class Plan:
    changes: tuple[Change, ...]  # every difference, in apply order; see supported
    findings: tuple[Finding, ...]  # staged: current / introduced / resolved
    unsupported: tuple[Change, ...]  # the changes this host cannot take (also in changes)
    needs_restart: tuple[str, ...]  # setting names applied by a restart
    requires_acknowledgement: tuple[str, ...]  # risk ids not yet acknowledged

    @property
    def empty(self) -> bool:
        return not any(change.supported for change in self.changes)


def plan(facts: HostFacts, settings: ProfileSettings,
         acknowledged: frozenset[str] = frozenset(), winners: Winners | None = None) -> Plan:
    """`winners`: what this host's experiments decided for the values the profile leaves
    to them (apps/tuning/core/winners.py); without one such a value is not planned."""
    findings = tuple(advise(facts, settings, acknowledged, winners))
    linked = [_link(change, findings) for change in compute_changes(facts, settings, winners)]
    ordered = sorted(linked, key=_position)
    supported = tuple(c for c in ordered if c.supported)
    return Plan(
        changes=tuple(ordered),
        findings=findings,
        unsupported=tuple(c for c in ordered if not c.supported),
        needs_restart=tuple(sorted({c.key for c in supported if c.method == "pg_restart"})),
        requires_acknowledgement=_missing_acknowledgements(settings, supported, acknowledged),
    )


def judge(facts: HostFacts, changes: list[Change],
          acknowledged: frozenset[str] = frozenset()) -> tuple[tuple[Finding, ...],
                                                              tuple[Change, ...]]:
    """The advisor around changes that come from no profile (a rollback's): the staged
    findings, and each change linked to them with the hazards it would bring."""
    findings = tuple(advise_changes(facts, changes, acknowledged))
    return findings, tuple(_link(change, findings) for change in changes)


def _position(change: Change) -> tuple[int, str, str]:
    stage = change.method if change.layer == "postgres" else change.layer
    return ORDER.index(stage), change.target, change.key


def _link(change: Change, findings: tuple[Finding, ...]) -> Change:
    """The findings a change can cause or cure (RELATED), on its own subject or host-wide;
    those the plan introduces are the change's hazards."""
    related = RELATED.get((change.layer, change.key), ())
    host_wide = change.layer in ("module", "sysctl")
    linked = [f for f in findings if f.id in related
              and (host_wide or f.subject in (change.target, "host"))]
    hazards = tuple(f for f in linked if f.stage == "introduced") if change.supported else ()
    return replace(change, findings=tuple(sorted({f.id for f in linked})), hazards=hazards)


def _missing_acknowledgements(settings: ProfileSettings, changes: tuple[Change, ...],
                              acknowledged: frozenset[str]) -> tuple[str, ...]:
    """Declared by the profile, or carried by a change (a custom profile may not declare)."""
    needed = set(settings.requires_acknowledgement)
    needed.update(risk for change in changes for risk in change.acknowledgements)
    return tuple(sorted(needed - set(acknowledged)))
