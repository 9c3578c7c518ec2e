"""The fleet app's own sections of the host page (the registry is apps.fleet.sections)."""

from __future__ import annotations

from apps.fleet import reserves
from apps.fleet.models import Host
from apps.fleet.sections import Section, register_section
from apps.ops.models import Operation

RECENT_OPERATIONS = 20


def storage(host: Host) -> dict:
    # host.pools and host.clusters come prefetched with the host (the header shows them).
    kept = {row["pool"]: row for row in reserves.shown(host)}
    return {"pools": [(pool, kept.get(pool.name)) for pool in host.pools.all()],
            "datasets": host.datasets.all(), "disks": host.disks.all()}


def postgresql(host: Host) -> dict:
    return {"clusters": host.clusters.all()}


def operations(host: Host) -> dict:
    # Not host.operations: a related manager reads each row's host_id, which the
    # table's columns leave out, one query per row.
    recent = Operation.objects.filter(host=host).for_table()[:RECENT_OPERATIONS]
    return {"operations": recent,
            "recent_operations": RECENT_OPERATIONS}


def register() -> None:
    register_section(Section("overview", "Overview", 10, "fleet/sections/overview.html",
                             needs_facts=False))
    register_section(Section("datasets", "Datasets", 20, "fleet/sections/datasets.html",
                             context=storage))
    register_section(Section("postgresql", "PostgreSQL", 30, "fleet/sections/postgresql.html",
                             context=postgresql))
    register_section(Section("operations", "Operations", 90, "fleet/sections/operations.html",
                             context=operations, needs_facts=False))
