"""The alert snapshots raises (registered on import; the registry is
apps.common.alert_kinds)."""

from apps.common.alert_kinds import AlertKind, register

SNAPSHOTS_STALE = register(AlertKind("snapshots_stale", "Snapshot age"))
