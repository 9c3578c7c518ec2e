"""The conditions nobody else watches, decided from what PoZoL already stored:
telemetry (ARC hit rate, pool health and errors, scrubs), tuning's drift, and
operations (their kinds: alert_kinds.py). Each writes its host's Alert of that
kind through raise_or_resolve, like every other source; no SSH here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from apps.alerts.alert_kinds import (
    ARC_HIT_RATE,
    OPERATION_FAILED,
    POOL_HEALTH,
    PROFILE_DRIFT,
    SCRUB_OVERDUE,
)
from apps.alerts.core import conditions as core
from apps.alerts.models import Alert, Rule
from apps.alerts.rules import rules_by_kind
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.telemetry.models import HostTelemetry, RawSample
from apps.tuning.models import Assignment

# Failed operations older than this are history, not a condition.
OPERATION_WINDOW = timedelta(days=7)
KEEP = False  # a check's answer for "nothing to go on": leave the alert as it is


def evaluate_all(now: datetime) -> int:
    """Every evaluated rule on every host; the number of hosts looked at."""
    rules = rules_by_kind()
    hosts = list(Host.objects.only("pk", "name", "created_at", "facts"))
    for host in hosts:
        open_kinds = set(Alert.objects.filter(host=host, resolved_at=None)
                         .values_list("kind", flat=True))
        for kind, check in CHECKS.items():
            rule = rules.get(kind)
            if rule is None or not rule.enabled:
                message = None  # a disabled rule leaves nothing firing behind it
            else:
                message = check(host, rule, kind in open_kinds, now)
            if message is not KEEP and (message is not None or kind in open_kinds):
                Alert.raise_or_resolve(host, kind, message)
    return len(hosts)


def arc_hit_rate(host: Host, rule: Rule, firing: bool, now: datetime) -> str | None | bool:
    """Over the last interval between two samples (counters since boot say nothing
    of now); a reset or an idle ARC leaves the alert as it is."""
    rows = list(RawSample.objects.filter(host=host, taken_at__gte=now - timedelta(minutes=30))
                .order_by("-taken_at").values_list("values__arc__hits", "values__arc__misses")[:2])
    if len(rows) < 2 or any(v is None for row in rows for v in row):
        return KEEP
    after, before = (core.ArcCounters(int(h), int(m)) for h, m in rows)
    return core.arc_message(core.arc_hit_rate(before, after), rule.threshold or 0,
                            rule.hysteresis, firing)


def pool_health(host: Host, rule: Rule, firing: bool, now: datetime) -> str | None | bool:
    pools = _pools(host)
    return KEEP if pools is None else core.pool_health_message(pools)


def scrub_overdue(host: Host, rule: Rule, firing: bool, now: datetime) -> str | None | bool:
    pools = _pools(host)
    if pools is None:
        return KEEP
    return core.scrub_message(pools, now, rule.threshold or 35, host.created_at)


def profile_drift(host: Host, rule: Rule, firing: bool, now: datetime) -> str | None:
    assignment = Assignment.objects.filter(host=host).select_related("profile").first()
    if assignment is None or not assignment.drifted:
        return None
    return (f"{len(assignment.drift)} setting(s) differ from profile "
            f"{assignment.profile}: " + ", ".join(_drift_names(assignment.drift)))


def operation_failed(host: Host, rule: Rule, firing: bool, now: datetime) -> str | None:
    """Open while the latest finished operation of some kind on the host failed;
    a later success of that kind resolves it."""
    latest = (Operation.objects.filter(host=host, finished_at__gte=now - OPERATION_WINDOW)
              .order_by("kind", "-finished_at").distinct("kind")
              .only("pk", "kind", "status", "error"))
    failed = [op for op in latest if op.status == Operation.Status.FAILED]
    return "; ".join(f"operation #{op.pk} {op.kind} failed: {op.error[:200]}"
                     for op in failed) or None


CHECKS: dict[str, Callable[..., str | None | bool]] = {
    ARC_HIT_RATE.name: arc_hit_rate, POOL_HEALTH.name: pool_health,
    SCRUB_OVERDUE.name: scrub_overdue, PROFILE_DRIFT.name: profile_drift,
    OPERATION_FAILED.name: operation_failed,
}


def _pools(host: Host) -> dict[str, dict] | None:
    """Pools by name from the last telemetry sample, else from discovery's facts."""
    telemetry = HostTelemetry.objects.filter(host=host).values_list("last_sample", flat=True)
    sample = next(iter(telemetry), None)
    if sample and sample.get("pools"):
        return {p["name"]: p for p in sample["pools"]}
    facts = (host.facts or {}).get("pools")
    if not facts:
        return None
    return {p["name"]: {"health": p.get("health"),
                        "scrub": {"state": "finished" if p.get("last_scrub") else "none",
                                  "ended": p.get("last_scrub")}} for p in facts}


def _drift_names(drift: list) -> list[str]:
    names = [str(change.get("key") or change.get("name") or "?") for change in drift
             if isinstance(change, dict)]
    return names[:5] + (["..."] if len(names) > 5 else [])
