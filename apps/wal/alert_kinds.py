"""The alert WAL archiving raises (registered on import; the registry is
apps.common.alert_kinds)."""

from apps.common.alert_kinds import AlertKind, register

WAL_ARCHIVE = register(AlertKind("wal_archive", "WAL archive gap or failing archiver"))
