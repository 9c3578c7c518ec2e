"""When a policy's next snapshot is due, what it is called and what it carries.

Time is cut into UTC slots per period, as sanoid does: a frequent slot every
`frequent_minutes` from the top of the hour, an hourly slot per hour, a daily
slot per day, a weekly slot from Monday 00:00, a monthly slot from the 1st.
A period is due when the current slot of that period holds no snapshot of the
policy yet. A missed slot is not made up later (sanoid does not either): after
an outage the next tick takes one snapshot for every period that is due.

One snapshot serves every period that is due at that moment (the 00:00 snapshot
on a Monday is the hourly, daily and weekly one), as with zrepl's grid, not one
snapshot per period as sanoid makes. Why, for safety:
- one snapshot per tick is one atomic cluster snapshot (data and WAL together)
  to take, hold, send and prune, not up to five of the same instant;
- the names the issue asks for (`<prefix>_<policy>_<UTC time>`) are unique per
  instant, which they could not be with one snapshot per period;
- retention (see retention.py) decides membership from the time slot, not
  from a label, so a snapshot is destroyed only when no period wants it, and
  raising a count or adding a period never leaves a period without the
  snapshots that already exist for its slots.

Slots use the snapshot's `taken` time (pozol:taken, the control plane's clock),
so a host whose clock is behind cannot make every tick look due. A snapshot
whose time is after `now` (a clock set back) belongs to a later slot and does not
stop the current slot from being due.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from apps.snapshots.core import naming
from apps.snapshots.core.policy import (
    OWNER,
    OWNER_PROPERTY,
    PERIODS_PROPERTY,
    POLICY_PROPERTY,
    TAKEN_PROPERTY,
    TIMESTAMP_FORMAT,
    Period,
    Policy,
    SnapshotInfo,
    owned_by,
    utc,
)


def slot_start(policy: Policy, period: Period, moment: datetime) -> datetime:
    """The UTC start of the `period` slot that holds `moment`."""
    moment = utc(moment, "moment").replace(second=0, microsecond=0)
    if period is Period.FREQUENTLY:
        return moment.replace(minute=moment.minute - moment.minute % policy.frequent_minutes)
    hour = moment.replace(minute=0)
    if period is Period.HOURLY:
        return hour
    day = hour.replace(hour=0)
    if period is Period.DAILY:
        return day
    if period is Period.WEEKLY:
        return day - timedelta(days=day.weekday())
    return day.replace(day=1)


@dataclass(frozen=True)
class NewSnapshot:
    """The snapshot to take now: `name` goes after '@' on each dataset of the target."""

    name: str
    policy: str
    taken: datetime
    periods: tuple[Period, ...]

    def properties(self) -> dict[str, str]:
        """User properties to set when taking it (`zfs snapshot -o k=v ...`)."""
        return {
            OWNER_PROPERTY: OWNER,
            POLICY_PROPERTY: self.policy,
            TAKEN_PROPERTY: self.taken.strftime(TIMESTAMP_FORMAT),
            PERIODS_PROPERTY: ",".join(p.value for p in self.periods),
        }


@dataclass(frozen=True)
class Due:
    periods: tuple[Period, ...]  # shortest first; empty when nothing is due
    snapshot: NewSnapshot | None  # None when nothing is due


def snapshot_name(policy: Policy, taken: datetime) -> str:
    """`<prefix>_<policy>_<YYYYmmddTHHMMSSZ>`: sortable by time, UTC."""
    return naming.snapshot_name(utc(taken, "taken"), policy.name, policy.prefix)


def due(policy: Policy, snapshots: Iterable[SnapshotInfo], now: datetime,
        datasets: Collection[str] = ()) -> Due:
    """Which periods of `policy` are due at `now`, and the snapshot to take for them.

    `snapshots`: those of one target (a dataset, or a cluster's data and WAL
    datasets); others, and snapshots not owned by the policy, are ignored.
    A period is due when any dataset of the target lacks a snapshot in the
    current slot. `datasets` names the target's datasets so that one with no
    snapshot of the policy at all makes every period due.
    """
    now = utc(now)
    ours = [s for s in snapshots if owned_by(s, policy)]
    named = {datasets} if isinstance(datasets, str) else set(datasets)  # one name, not letters
    target = named | {s.dataset for s in ours}
    periods = tuple(p for p in policy.active_periods()
                    if _due_on_any(policy, p, ours, target, now))
    if not periods:
        return Due((), None)
    new = NewSnapshot(name=snapshot_name(policy, now), policy=policy.name, taken=now,
                      periods=periods)
    return Due(periods, new)


def _due_on_any(policy: Policy, period: Period, ours: list[SnapshotInfo],
                target: set[str], now: datetime) -> bool:
    current = slot_start(policy, period, now)
    covered = {s.dataset for s in ours if slot_start(policy, period, s.taken) == current}
    return not target or bool(target - covered)
