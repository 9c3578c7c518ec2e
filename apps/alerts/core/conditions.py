"""The conditions the evaluator decides from values it read, and the checks of a
rule's threshold against its kind's unit and range.

Two ways an alert's row is written (apps/alerts' Alert): kinds the product sees
where it works (discovery, the SSH layer, snapshot and replication ticks,
restore drills) raise and resolve their own; the rest are decided by apps/alerts'
evaluator from telemetry, tuning and operations. Every kind (apps.common.alert_kinds,
contributed by the app that raises it) has a rule either way: whether it is
delivered, after how long, and how long its resolution must hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from apps.common.alert_kinds import AlertKind

# An ARC with fewer lookups than this in an interval says nothing about its hit rate.
MIN_ARC_LOOKUPS = 100


def check_threshold(spec: AlertKind, value: float | None) -> str | None:
    """Why `value` is no threshold for the kind, or None when it is one."""
    if not spec.unit:
        return None if value is None else "this rule has no threshold"
    if value is None:
        return f"a threshold in {spec.unit} is required"
    if not spec.minimum <= value <= spec.maximum:
        return f"must be between {spec.minimum:g} and {spec.maximum:g} {spec.unit}"
    return None


def check_hysteresis(spec: AlertKind, threshold: float | None, margin: float) -> str | None:
    if margin < 0:
        return "must be 0 or more"
    if not spec.unit:
        return None if margin == 0 else "this rule has no threshold"
    if threshold is not None and margin > spec.maximum - spec.minimum:
        return f"must be at most {spec.maximum - spec.minimum:g} {spec.unit}"
    return None


def below(value: float, threshold: float, margin: float, firing: bool) -> bool:
    """Hysteresis for "under X": once firing, it clears only above X + margin."""
    return value < (threshold + margin if firing else threshold)


@dataclass(frozen=True)
class ArcCounters:
    hits: int
    misses: int


def arc_hit_rate(before: ArcCounters, after: ArcCounters) -> float | None:
    """Percent over the interval; None after a reset or with too few lookups."""
    hits, misses = after.hits - before.hits, after.misses - before.misses
    if hits < 0 or misses < 0 or hits + misses < MIN_ARC_LOOKUPS:
        return None
    return 100.0 * hits / (hits + misses)


def arc_message(rate: float | None, threshold: float, margin: float,
                firing: bool) -> str | None | bool:
    """The alert's text, None to resolve, or False to leave it as it is (no data)."""
    if rate is None:
        return False
    if below(rate, threshold, margin, firing):
        return f"ARC hit rate {rate:.1f}% is under {threshold:g}%"
    return None


def pool_health_message(pools: dict[str, dict]) -> str | None:
    """From the last sample's pools: not ONLINE, or errors counted by `zpool status`
    (they stay until `zpool clear`, so "new" errors are ones not cleared yet)."""
    problems = []
    for name, pool in sorted(pools.items()):
        health = pool.get("health")
        if health and health != "ONLINE":
            problems.append(f"pool {name} is {health}")
        errors = [f"{pool[key]} {label} errors" for key, label in (
            ("checksum_errors", "checksum"), ("read_errors", "read"),
            ("write_errors", "write"), ("data_errors", "data")) if pool.get(key)]
        if errors:
            problems.append(f"pool {name} has {', '.join(errors)}")
    return "; ".join(problems) or None


def scrub_message(pools: dict[str, dict], now: datetime, days: float,
                  known_since: datetime) -> str | None:
    """Pools whose last finished scrub ended more than `days` ago. A pool never
    scrubbed counts from when PoZoL first knew the host (a new pool is not late).
    Scrub end times are the host's local time, without zone: read as UTC, a few
    hours are nothing against 35 days."""
    late, limit = [], timedelta(days=days)
    for name, pool in sorted(pools.items()):
        scrub = pool.get("scrub") or {}
        if scrub.get("state") == "in progress":
            continue
        ended = _parse(scrub.get("ended"))
        if ended is not None and now - ended > limit:
            late.append(f"pool {name} last scrubbed {(now - ended).days} days ago")
        elif ended is None and now - known_since > limit:
            late.append(f"pool {name} has no finished scrub")
    return "; ".join(late) or None


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)

