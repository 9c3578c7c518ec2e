"""Which snapshots a policy keeps, which it may destroy, and why: pure decisions.

plan_prune() is given every snapshot of one target (a dataset, or a cluster's
data and WAL datasets; passing more datasets is safe, see "units" below) and
returns each kept snapshot with its reasons, and the ones to destroy.

Only a snapshot PoZoL took under this very policy (pozol:owner and
pozol:policy on the snapshot, never its name) can be destroyed, and never when:
- it is held (userrefs > 0) or has clones;
- the caller protects it (`protected`: full name -> reason), e.g. the newest
  snapshot common to a replication link's source and target;
- it is the newest snapshot of the policy on its dataset, even with all counts 0;
- its time is after `now` (a clock set back: keep it, decide later).

Counts, per dataset: for each period the policy keeps, the N newest slots of
that period (see schedule.py) that hold a snapshot each keep their earliest
snapshot. Counting slots rather than snapshots is zrepl's grid lesson: a burst
of extra snapshots (a retried task, two beats racing) collapses within its slot
instead of pushing older history out, which plain "N newest snapshots" would do.
Slots that hold no snapshot are skipped, as sanoid counts snapshots, not time:
after an outage the N newest still reach back before it. Membership comes from
the time, not a label, so a snapshot can serve several periods and is destroyed
only when no period wants it.

Units: a cluster's data and WAL snapshots taken together share one name, and a
cluster snapshot is one unit: among this policy's snapshots, those with the same
name (on any of the datasets given) are kept together when any of them is kept,
so a half-pruned cluster snapshot is never left by design. Snapshots of other
owners never join a unit, so a hand-made look-alike cannot pin ours.

Replication: the sender protects the newest common snapshot of each link via
`protected`. The receiver applies the same plan_prune with policy.receiving()
(the link's own counts under the source policy's identity, as received
snapshots carry pozol:owner/pozol:policy) and protects its newest common snapshot.

Where this differs from sanoid: sanoid also keeps every snapshot younger than
N periods (daily=30 keeps all dailies of the last 30 days, however many). With
slots a burst is already harmless, so the counts are exact, and the preview a
person reads before saving is exactly what the next prune does. zrepl's wish
list ("prune at the granularity of the group of snapshots created at a given
time", "hourly/daily/... trains plus a count") is what units and slots do here.

plan_prune is idempotent: destroying its `destroy` list and planning again with
the same inputs destroys nothing more.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from apps.snapshots.core.policy import (
    Period,
    Policy,
    PolicyError,
    SnapshotInfo,
    newest_first,
    owned_by,
    utc,
)
from apps.snapshots.core.schedule import slot_start


class Why(StrEnum):
    HAND_MADE = "hand_made"  # not taken by PoZoL
    OTHER_POLICY = "other_policy"  # taken by PoZoL, not under this policy
    HELD = "held"
    CLONES = "clones"
    PROTECTED = "protected"  # the caller's reason, e.g. newest common snapshot of a link
    FUTURE = "future"  # taken after `now`
    NEWEST = "newest"
    PERIOD = "period"  # one of the N newest of a period
    UNIT = "unit"  # taken together with a kept snapshot of another dataset


@dataclass(frozen=True)
class Reason:
    why: Why
    text: str  # for people: "held (2 holds)", "one of the 24 newest hourly snapshots"


@dataclass(frozen=True)
class Kept:
    snapshot: SnapshotInfo
    reasons: tuple[Reason, ...]  # never empty


@dataclass(frozen=True)
class PrunePlan:
    policy: str
    keep: tuple[Kept, ...]  # every snapshot given that is not destroyed, oldest first
    destroy: tuple[SnapshotInfo, ...]  # oldest first; a unit's snapshots are adjacent

    def destroy_names(self) -> tuple[str, ...]:
        return tuple(s.full_name for s in self.destroy)

    def reasons(self, full_name: str) -> tuple[Reason, ...]:
        """Why `full_name` is kept; () when it is destroyed or unknown."""
        return next((k.reasons for k in self.keep if k.snapshot.full_name == full_name), ())


def plan_prune(policy: Policy, snapshots: Iterable[SnapshotInfo],
               protected: Mapping[str, str] | None, now: datetime) -> PrunePlan:
    now = utc(now)
    listed = list(snapshots)
    reasons: dict[str, list[Reason]] = defaultdict(list)
    for snapshot in listed:  # a name listed twice keeps every guard of both entries
        reasons[snapshot.full_name] += _guards(policy, snapshot, protected or {}, now)
    given = _unique(listed)
    ours = [s for s in given if owned_by(s, policy)]
    for group in _by_dataset(ours).values():
        for snapshot, reason in _wanted(policy, group, now):
            reasons[snapshot.full_name].append(reason)
    _keep_units_whole(ours, reasons)
    order = _unit_order(given)
    keep = tuple(Kept(s, tuple(reasons[s.full_name])) for s in sorted(given, key=order)
                 if reasons[s.full_name])
    destroy = tuple(s for s in sorted(ours, key=order) if not reasons[s.full_name])
    return PrunePlan(policy.name, keep, destroy)


def _unique(snapshots: list[SnapshotInfo]) -> list[SnapshotInfo]:
    seen: dict[str, SnapshotInfo] = {}
    for snapshot in snapshots:
        seen.setdefault(snapshot.full_name, snapshot)
    return list(seen.values())


def _unit_order(snapshots: list[SnapshotInfo]) -> Callable[[SnapshotInfo], tuple]:
    """Oldest first, a unit's snapshots side by side even when their times differ."""
    first: dict[str, datetime] = {}
    for snapshot in snapshots:
        first[snapshot.name] = min(first.get(snapshot.name, snapshot.taken), snapshot.taken)
    return lambda s: (first[s.name], s.name, s.dataset)


def _by_dataset(snapshots: list[SnapshotInfo]) -> dict[str, list[SnapshotInfo]]:
    groups: dict[str, list[SnapshotInfo]] = defaultdict(list)
    for snapshot in snapshots:
        groups[snapshot.dataset].append(snapshot)
    return groups


def refusals(snapshot: SnapshotInfo, protected: Mapping[str, str] | None = None
             ) -> tuple[Reason, ...]:
    """Why nobody may destroy `snapshot`, policy or person: held, cloned or protected.

    The same guards as pruning, for a destroy asked for by hand (API or UI):
    an empty tuple means it may go; otherwise each reason's text says why not.
    """
    reasons = []
    if snapshot.userrefs > 0:
        holds = "hold" if snapshot.userrefs == 1 else "holds"
        reasons.append(Reason(Why.HELD, f"held ({snapshot.userrefs} {holds})"))
    if snapshot.clones:
        reasons.append(Reason(Why.CLONES, f"has clones: {', '.join(snapshot.clones)}"))
    if protected and snapshot.full_name in protected:
        reasons.append(Reason(Why.PROTECTED, protected[snapshot.full_name]))
    return tuple(reasons)


def _guards(policy: Policy, snapshot: SnapshotInfo, protected: Mapping[str, str],
            now: datetime) -> list[Reason]:
    """Reasons that keep a snapshot whatever the counts say."""
    reasons = []
    if not snapshot.made_by_pozol:
        reasons.append(Reason(Why.HAND_MADE, "not taken by PoZoL"))
    elif not owned_by(snapshot, policy):
        owner = snapshot.policy_name
        where = f"policy {owner!r}" if owner else "no policy (taken on demand)"
        reasons.append(Reason(Why.OTHER_POLICY, f"taken by PoZoL under {where}"))
    reasons += refusals(snapshot, protected)
    if snapshot.taken > now:
        reasons.append(Reason(Why.FUTURE, "taken after the current time (clock set back?)"))
    return reasons


def _wanted(policy: Policy, group: list[SnapshotInfo],
            now: datetime) -> list[tuple[SnapshotInfo, Reason]]:
    """The policy's own reasons to keep snapshots of one dataset."""
    past = [s for s in group if s.taken <= now]
    if not past:
        return []
    wanted = [(newest_first(past)[0], Reason(Why.NEWEST, "newest snapshot of the policy"))]
    for period in policy.active_periods():
        wanted += _newest_slots(policy, period, past)
    return wanted


def _newest_slots(policy: Policy, period: Period,
                  snapshots: list[SnapshotInfo]) -> list[tuple[SnapshotInfo, Reason]]:
    earliest: dict[datetime, SnapshotInfo] = {}
    for snapshot in sorted(snapshots, key=lambda s: (s.taken, s.name)):
        earliest.setdefault(slot_start(policy, period, snapshot.taken), snapshot)
    count = policy.count(period)
    reason = Reason(Why.PERIOD, f"one of the {count} newest {period.value} snapshots")
    newest = sorted(earliest, reverse=True)[:count]
    return [(earliest[slot], reason) for slot in newest]


def _keep_units_whole(ours: list[SnapshotInfo], reasons: dict[str, list[Reason]]) -> None:
    units: dict[str, list[SnapshotInfo]] = defaultdict(list)
    for snapshot in ours:
        units[snapshot.name].append(snapshot)
    for members in units.values():
        kept = [m for m in members if reasons[m.full_name]]
        if not kept:
            continue
        for member in members:
            if not reasons[member.full_name]:
                text = f"taken together with {kept[0].full_name}, which is kept"
                reasons[member.full_name].append(Reason(Why.UNIT, text))


@dataclass(frozen=True)
class Preview:
    """What saving `new` instead of `old` changes for the existing snapshots."""

    plan: PrunePlan  # the next prune under the new policy
    added: tuple[SnapshotInfo, ...]  # destroyed under new, kept under old
    spared: tuple[SnapshotInfo, ...]  # kept under new, destroyed under old


def preview(old: Policy, new: Policy, snapshots: Iterable[SnapshotInfo],
            protected: Mapping[str, str] | None, now: datetime) -> Preview:
    if old.name != new.name:
        raise PolicyError("name", f"A policy's name is its identity on ZFS: renaming "
                                  f"{old.name!r} to {new.name!r} would leave its snapshots "
                                  "to no policy, never pruned.")
    given = list(snapshots)
    before = plan_prune(old, given, protected, now)
    after = plan_prune(new, given, protected, now)
    was = set(before.destroy_names())
    will = set(after.destroy_names())
    added = tuple(s for s in after.destroy if s.full_name not in was)
    spared = tuple(s for s in before.destroy if s.full_name not in will)
    return Preview(after, added, spared)


@dataclass(frozen=True)
class Staleness:
    stale: bool
    age: timedelta | None  # of the newest snapshot; None when there is none
    limit: timedelta | None  # twice the shortest interval; None when nothing is scheduled
    newest: SnapshotInfo | None
    text: str


def stale(policy: Policy, snapshots: Iterable[SnapshotInfo], now: datetime,
          assigned_at: datetime | None = None) -> Staleness:
    """The alert rule: the newest snapshot of the policy is older than twice its
    shortest interval. With no snapshot at all, stale once `assigned_at` (when the
    policy was given this target) is that long ago, or at once when not known.
    Snapshots timed after `now` are ignored: they would hide a stopped schedule."""
    now = utc(now)
    periods = policy.active_periods()
    past = [s for s in snapshots if owned_by(s, policy) and s.taken <= now]
    newest = newest_first(past)[0] if past else None
    if not periods:
        return Staleness(False, _age(newest, now), None, newest,
                         f"policy {policy.name!r} takes no snapshots")
    limit = 2 * min(policy.interval(p) for p in periods)
    if newest is None:
        since = now - utc(assigned_at, "assigned_at") if assigned_at else None
        late = since is None or since > limit
        return Staleness(late, None, limit, None, f"no snapshot of policy {policy.name!r} yet")
    age = now - newest.taken
    text = (f"newest snapshot of policy {policy.name!r} is {_human(age)} old "
            f"(alert after {_human(limit)})")
    return Staleness(age > limit, age, limit, newest, text)


def _age(snapshot: SnapshotInfo | None, now: datetime) -> timedelta | None:
    return now - snapshot.taken if snapshot else None


def _human(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "",
             f"{minutes} min" if minutes else ""]
    return " ".join(p for p in parts if p) or "under a minute"
