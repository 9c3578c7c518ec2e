"""Drift: how a host differs from its profile, told apart from what waits for a restart.

A PostgreSQL setting written with ALTER SYSTEM that needs a restart keeps its
old value in pg_settings (with pending_restart set) until the server restarts:
it is not drift, it is pending. pg_settings does not say the pending value, so
the caller passes the values PoZoL itself wrote and left waiting (from the
plans it applied). A pending value that is not the profile's stays a difference;
an unknown one (written outside PoZoL) is shown as pending, value unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from apps.remote.facts.host import HostFacts
from apps.tuning.core import facts as r
from apps.tuning.core import pgvalues
from apps.tuning.core.changes import Change, compute_changes
from apps.tuning.core.profiles import ProfileSettings
from apps.tuning.core.winners import Winners


@dataclass(frozen=True)
class Pending:
    """A setting written but not in force until PostgreSQL restarts."""

    target: str  # the cluster's data_dir
    key: str
    current: str | None  # what the running server uses
    pending: str | None  # what it will use after the restart; None when not known
    desired: str  # what the profile asks for


@dataclass(frozen=True)
class Drift:
    differences: tuple[Change, ...]  # supported changes a plan would make now
    pending: tuple[Pending, ...]  # differences that a restart will settle


def assess(facts: HostFacts, settings: ProfileSettings,
           written: Mapping[tuple[str, str], str | None] | None = None,
           winners: Winners | None = None) -> Drift:
    """The host against its profile. `written`: (data_dir, setting) -> the value PoZoL
    wrote that waits for a restart (None: PoZoL reset it, so the value is not known).
    `winners`: as for a plan; a value no experiment decided is no difference."""
    differences, pending = [], []
    for change in compute_changes(facts, settings, winners):
        if not change.supported:
            continue
        waiting = _pending(facts, change, written or {})
        if waiting is None:
            differences.append(change)
        else:
            pending.append(waiting)
    return Drift(tuple(differences), tuple(pending))


def _pending(facts: HostFacts, change: Change,
             written: Mapping[tuple[str, str], str | None]) -> Pending | None:
    if change.layer != "postgres":
        return None
    cluster = next((c for c in facts.clusters if c.data_dir == change.target), None)
    row = r.setting(cluster, change.key)
    if row is None or not row.pending_restart:
        return None
    value = written.get((change.target, change.key))
    if value is not None and not pgvalues.same(value, change.desired, row.vartype, row.unit,
                                                 change.key):
        return None  # what waits is not the profile's value: still a difference
    return Pending(change.target, change.key, change.current, value, change.desired)
