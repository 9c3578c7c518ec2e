"""The alerts fleet raises: discovery's and the SSH layer's (registered on import;
the registry is apps.common.alert_kinds)."""

from apps.common.alert_kinds import AlertKind, register

UNREACHABLE = register(AlertKind("unreachable", "Host unreachable", for_minutes=5))
HOST_KEY_CHANGED = register(AlertKind("host_key_changed", "Host key changed", clear_minutes=0))
POOL_CAPACITY = register(AlertKind("pool_capacity", "Pool capacity", unit="%", minimum=1,
                                   maximum=99, threshold=80))
CLUSTER_DOWN = register(AlertKind("cluster_down", "PostgreSQL cluster down"))
