"""The Snapshots tab of the host page (apps.fleet.sections): snapshot now, and the inventory."""

from __future__ import annotations

from apps.fleet.models import Host
from apps.fleet.sections import Section, register_section
from apps.snapshots.models import Snapshot

SHOWN = 500  # the newest; the API pages through all of them


def context(host: Host) -> dict:
    # host.clusters comes prefetched with the host page's host.
    snapshots = list(Snapshot.objects.filter(host=host)[:SHOWN + 1])
    return {"clusters": host.clusters.all(), "snapshots": snapshots[:SHOWN],
            "more": len(snapshots) > SHOWN, "shown": SHOWN,
            "datasets": host.datasets.filter(type="filesystem").values_list("name", flat=True),
            "assignments": host.policy_assignments.select_related("policy")}


def register() -> None:
    register_section(Section("snapshots", "Snapshots", 45, "snapshots/_host_section.html",
                             context=context))
