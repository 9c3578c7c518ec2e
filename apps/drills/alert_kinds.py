"""The alert restore drills raise (registered on import; the registry is
apps.common.alert_kinds)."""

from apps.common.alert_kinds import AlertKind, register

RESTORE_DRILL_FAILED = register(AlertKind("restore_drill_failed", "Restore drill failed",
                                          clear_minutes=0))
