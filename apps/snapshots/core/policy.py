"""Snapshot policies and the snapshots they own: plain values, no Django, no I/O.

A policy is a named template like sanoid's: how many frequently (every
`frequent_minutes`), hourly, daily, weekly and monthly snapshots to keep, the
prefix of the names it makes, and whether PostgreSQL gets a CHECKPOINT first.

Ownership is written on ZFS itself, as user properties on each snapshot PoZoL
takes, because the name cannot be trusted (anyone can `zfs snapshot` a name that
looks like ours, and `zfs rename` keeps the properties):

    pozol:owner   = pozol          PoZoL took it
    pozol:policy  = <policy name>  under that policy (its stable identity)
    pozol:taken   = 20260101T120000Z  the control plane's UTC clock when taken
    pozol:periods = hourly,daily   the periods that were due (for people to read)

`pozol:taken` exists because the host's `creation` comes from the host's clock:
a host a few minutes behind would make a snapshot taken at 12:00:30 look like
11:55:30, older than the hour boundary, and every tick would take another one.
Ordering and time slots use `pozol:taken` when it parses, else `creation`.

Properties travel to a replication target with `zfs send -p`, so a received
snapshot is still ours there (receiver-side pruning relies on it).

Contract for the caller that builds SnapshotInfo: `properties` holds only values
set on the snapshot itself (ZFS source `local` or `received`). ZFS snapshots
inherit user properties from their dataset, and `zfs list -o pozol:owner` prints
inherited values without saying so: were `pozol:owner` ever set on a dataset,
every hand-made snapshot of it would look like ours.

Lessons taken from the tools operators use today:
- sanoid and TrueNAS recognise their snapshots by name (`autosnap_..._daily`,
  a naming schema), and zrepl has no notion of ownership at all (its docs say
  user-made snapshots are pruned alike unless a regex rule keeps them). Here
  the properties decide, so a look-alike is never pruned and a renamed one is.
- sanoid's templates and counts per period (frequently with `frequent_period`
  in minutes, hourly, daily, weekly, monthly) are kept, as is its 31-day month
  for intervals; yearly is left out (monthly=120 already spans ten years).
- counts are bounded: a typo of 100000 dailies is refused, not obeyed.

A policy's `name` is its identity on ZFS (recorded in `pozol:policy`): renaming
it would leave the old snapshots owned by nobody, never pruned. The app keeps it
stable (a slug that cannot be edited, or a key derived from the primary key).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from types import MappingProxyType

from apps.common.numbers import is_whole
from apps.snapshots.core import naming

OWNER_PROPERTY = "pozol:owner"
OWNER = "pozol"
POLICY_PROPERTY = "pozol:policy"
TAKEN_PROPERTY = "pozol:taken"
PERIODS_PROPERTY = "pozol:periods"

TIMESTAMP_FORMAT = naming.STAMP  # sortable, UTC, the suffix of every name we make

NAME_MAX = 64
PREFIX_MAX = 32
_SAFE = re.compile(r"[A-Za-z0-9_.-]+")


class Period(StrEnum):
    """The periods of a policy, shortest first (the order is relied upon)."""

    FREQUENTLY = "frequently"
    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"


# More than about ten years of any period, or more than 2,000 snapshots of one,
# is a typo, not a plan: every prune and listing pays for each snapshot kept.
MAX_COUNT = {
    Period.FREQUENTLY: 2000,
    Period.HOURLY: 2000,
    Period.DAILY: 3660,
    Period.WEEKLY: 522,
    Period.MONTHLY: 120,
}
_SPAN = {
    Period.FREQUENTLY: "",
    Period.HOURLY: " (about 83 days)",
    Period.DAILY: " (10 years)",
    Period.WEEKLY: " (10 years)",
    Period.MONTHLY: " (10 years)",
}

# Frequent snapshots line up with the hour, as sanoid's frequent_period does.
FREQUENT_MINUTES = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60)


class PolicyError(ValueError):
    """A policy (or a value given to this package) a person must correct.

    `field` names the offending input so a form or serializer can attach the
    message to it; str(error) is the message itself.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Policy:
    name: str
    prefix: str = "pozol"
    frequently: int = 0
    frequent_minutes: int = 15
    hourly: int = 0
    daily: int = 0
    weekly: int = 0
    monthly: int = 0
    checkpoint: bool = False  # CHECKPOINT in PostgreSQL before the snapshot

    def __post_init__(self) -> None:
        _check_word("name", self.name, NAME_MAX, "policy name")
        _check_word("prefix", self.prefix, PREFIX_MAX, "prefix")
        for period in Period:
            _check_count(period, getattr(self, period.value))
        _check_frequent_minutes(self.frequent_minutes)
        if not isinstance(self.checkpoint, bool):
            raise PolicyError("checkpoint", "checkpoint must be true or false.")

    def count(self, period: Period) -> int:
        return getattr(self, period.value)

    def active_periods(self) -> tuple[Period, ...]:
        """The periods this policy keeps (count above 0), shortest first."""
        return tuple(p for p in Period if self.count(p) > 0)

    def interval(self, period: Period) -> timedelta:
        """The longest time between two slots of `period` (a month counts 31 days)."""
        if period is Period.FREQUENTLY:
            return timedelta(minutes=self.frequent_minutes)
        return _INTERVALS[period]


_INTERVALS = {
    Period.HOURLY: timedelta(hours=1),
    Period.DAILY: timedelta(days=1),
    Period.WEEKLY: timedelta(days=7),
    Period.MONTHLY: timedelta(days=31),
}


def _check_word(field_name: str, value: object, limit: int, label: str) -> None:
    if not isinstance(value, str) or not value:
        raise PolicyError(field_name, f"The {label} must not be empty.")
    if len(value) > limit:
        raise PolicyError(field_name,
                          f"The {label} is {len(value)} characters long; at most {limit}.")
    if not _SAFE.fullmatch(value):
        raise PolicyError(field_name, f"The {label} {value!r} may only use letters A-Z a-z, "
                                      "digits, '_', '.' and '-'.")
    if value.startswith("-"):
        raise PolicyError(field_name, f"The {label} {value!r} must not start with '-' "
                                      "(a command would read it as an option).")


def _check_count(period: Period, value: object) -> None:
    if not is_whole(value):
        raise PolicyError(period.value, f"The number of {period.value} snapshots to keep must "
                                        f"be a whole number, not {value!r}.")
    if value < 0:
        raise PolicyError(period.value, f"The number of {period.value} snapshots to keep "
                                        f"cannot be negative ({value}).")
    limit = MAX_COUNT[period]
    if value > limit:
        raise PolicyError(period.value, f"Keep at most {limit} {period.value} snapshots"
                                        f"{_SPAN[period]}; {value} was asked for.")


def _check_frequent_minutes(value: object) -> None:
    if not is_whole(value) or value not in FREQUENT_MINUTES:
        allowed = ", ".join(str(m) for m in FREQUENT_MINUTES)
        raise PolicyError("frequent_minutes", f"The frequent period must divide an hour: "
                                              f"{allowed} minutes, not {value!r}.")


def receiving(source: Policy, *, frequently: int = 0, hourly: int = 0, daily: int = 0,
              weekly: int = 0, monthly: int = 0) -> Policy:
    """Keep rules on a replication target (zrepl's keep_receiver): the source policy's
    identity, so snapshots received from it are "ours", with the link's own counts."""
    return Policy(name=source.name, prefix=source.prefix, frequently=frequently,
                  frequent_minutes=source.frequent_minutes, hourly=hourly, daily=daily,
                  weekly=weekly, monthly=monthly, checkpoint=False)


@dataclass(frozen=True)
class SnapshotInfo:
    """One snapshot as the inventory knows it.

    `properties`: PoZoL's user properties set on the snapshot itself (see the
    module docstring); a property ZFS shows as "-" is simply absent.
    """

    full_name: str  # "tank/pg/data@pozol_hourly_20260101T120000Z"
    created: datetime  # ZFS `creation`, timezone-aware
    properties: Mapping[str, str] = field(default_factory=dict, hash=False)
    userrefs: int = 0  # holds
    clones: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        dataset, at, name = self.full_name.partition("@")
        if not (dataset and at and name) or "@" in name:
            raise ValueError(f"Not a snapshot name: {self.full_name!r}")
        object.__setattr__(self, "created", utc(self.created, "created"))
        object.__setattr__(self, "properties", MappingProxyType(dict(self.properties)))
        object.__setattr__(self, "clones", tuple(self.clones))
        if self.userrefs < 0:
            raise ValueError(f"{self.full_name}: userrefs cannot be negative")

    @property
    def dataset(self) -> str:
        return self.full_name.partition("@")[0]

    @property
    def name(self) -> str:
        """The part after '@'."""
        return self.full_name.partition("@")[2]

    @property
    def taken(self) -> datetime:
        """When PoZoL took it by the control plane's clock, else ZFS's creation time."""
        value = self.properties.get(TAKEN_PROPERTY, "")
        try:
            return datetime.strptime(value, TIMESTAMP_FORMAT).replace(tzinfo=UTC)
        except ValueError:
            return self.created

    @property
    def made_by_pozol(self) -> bool:
        return self.properties.get(OWNER_PROPERTY) == OWNER

    @property
    def policy_name(self) -> str | None:
        """The policy PoZoL took it under; None for hand-made and unscheduled ones."""
        if not self.made_by_pozol:
            return None
        return self.properties.get(POLICY_PROPERTY) or None


def owned_by(snapshot: SnapshotInfo, policy: Policy) -> bool:
    """PoZoL took it under this policy: the properties decide, never the name."""
    return snapshot.policy_name == policy.name


def utc(moment: datetime, label: str = "now") -> datetime:
    """`moment` in UTC; a naive datetime is refused because its zone is a guess."""
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise ValueError(f"{label} must be a timezone-aware datetime, not {moment!r}")
    return moment.astimezone(UTC)


def newest_first(snapshots: list[SnapshotInfo]) -> list[SnapshotInfo]:
    """Newest first; equal times fall back to the name so the order is total."""
    return sorted(snapshots, key=lambda s: (s.taken, s.name, s.created), reverse=True)
