"""The alerts this app's evaluator decides (evaluate.py) from what PoZoL already
stored; registered on import, beside every other app's (apps.common.alert_kinds)."""

from apps.common.alert_kinds import AlertKind, register

ARC_HIT_RATE = register(AlertKind(
    "arc_hit_rate", "ARC hit rate low", evaluated=True, unit="%", minimum=0, maximum=100,
    threshold=80, hysteresis=5, for_minutes=15))
POOL_HEALTH = register(AlertKind("pool_health", "Pool not ONLINE or checksum errors",
                                 evaluated=True))
SCRUB_OVERDUE = register(AlertKind("scrub_overdue", "No scrub", evaluated=True, unit="days",
                                   minimum=1, maximum=3650, threshold=35))
PROFILE_DRIFT = register(AlertKind("profile_drift", "Drift from the assigned profile",
                                   evaluated=True))
OPERATION_FAILED = register(AlertKind("operation_failed", "An operation failed",
                                      evaluated=True, clear_minutes=0))
