"""The WAL tab of the host page (apps.fleet.sections): each cluster of the host, its
archive (state, archiver, space, gaps) and the window a clone can reach, with the way
to turn archiving on or off."""

from __future__ import annotations

from apps.fleet.models import Host
from apps.fleet.sections import Section, register_section
from apps.wal.models import WalArchive


def context(host: Host) -> dict:
    clusters = list(host.clusters.select_related("data_dataset").order_by("port"))
    archives = {a.cluster_id: a for a in WalArchive.objects.filter(cluster__host=host)}
    return {"rows": [(cluster, archives.get(cluster.pk)) for cluster in clusters]}


def register() -> None:
    register_section(Section("wal", "WAL archive", 49, "wal/_host_section.html",
                             context=context))
