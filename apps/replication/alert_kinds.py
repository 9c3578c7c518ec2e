"""The alert replication raises (registered on import; the registry is
apps.common.alert_kinds)."""

from apps.common.alert_kinds import AlertKind, register

REPLICATION_LAG = register(AlertKind("replication_lag", "Replication lag"))
