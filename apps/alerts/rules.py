"""Reading and editing the rules (one row per registered kind: apps.common.alert_kinds)."""

from __future__ import annotations

from django.conf import settings

from apps.alerts.models import Rule
from apps.common import alert_kinds


def ensure() -> None:
    """Write the built-in rows that are missing (deleted by hand, or a flushed test
    database), so every kind can be seen and edited."""
    have = set(Rule.objects.values_list("kind", flat=True))
    Rule.objects.bulk_create([Rule(**row) for row in seed_rows() if row["kind"] not in have],
                             ignore_conflicts=True)


def rules_by_kind() -> dict[str, Rule]:
    """Every kind's rule; a built-in one whose row is missing (deleted by hand, or a
    flushed test database) acts with its defaults rather than not at all."""
    saved = {rule.kind: rule for rule in Rule.objects.all()}
    return {**{row["kind"]: Rule(**row) for row in seed_rows()}, **saved}


def pool_capacity_threshold() -> float:
    """The pool_capacity rule's threshold; the setting until the rule exists (before
    migrate) or when it has none."""
    rule = Rule.objects.filter(kind="pool_capacity").only("threshold").first()
    if rule is None or rule.threshold is None:
        return settings.POZOL["POOL_CAPACITY_ALERT"]
    return rule.threshold


def seed_rows() -> list[dict]:
    """The built-in rules' defaults, as the seeding migration writes them; the pool
    capacity threshold's default is POZOL_POOL_CAPACITY_ALERT, as it was before rules."""
    return [{"kind": s.name, "threshold": _default_threshold(s.name, s.threshold),
             "hysteresis": s.hysteresis, "for_minutes": s.for_minutes,
             "clear_minutes": s.clear_minutes} for s in alert_kinds.kinds()]


def _default_threshold(kind: str, threshold: float | None) -> float | None:
    return settings.POZOL["POOL_CAPACITY_ALERT"] if kind == "pool_capacity" else threshold
