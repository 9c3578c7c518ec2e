"""Two hosts and links between them in the database, without SSH: a source with a
cluster (data and WAL datasets) and a target with a pool."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from apps.fleet.models import Host, Pool
from apps.ops.models import Operation
from apps.replication import steps
from apps.replication.models import ReplicationLink
from tests.snapshots import factories as snapshot_factories


def source(name: str = "db1") -> Host:
    host = snapshot_factories.host(name)
    snapshot_factories.cluster(host)
    return host


def target(name: str = "db2") -> Host:
    host = snapshot_factories.host(name, datasets=("backup",))
    Pool.objects.create(host=host, name="backup", health="ONLINE")
    return host


def link(source_host: Host, target_host: Host, name: str = "main", **changes
         ) -> ReplicationLink:
    """A link row as a run would leave it; `changes` set any field."""
    values = {"sources": ["tank/pg/data", "tank/pg/wal"],
              "cluster_data_dir": source_host.clusters.first().data_dir
              if source_host.clusters.exists() else "",
              "target_parent": f"backup/{source_host.name}", **changes}
    return ReplicationLink.objects.create(name=name, source_host=source_host,
                                          target_host=target_host, **values)


def synced(source_host: Host, target_host: Host, name: str = "main", *,
           behind: timedelta = timedelta(minutes=20), **changes) -> ReplicationLink:
    """A link whose last run succeeded `behind` ago."""
    now = timezone.now()
    values = {"state": ReplicationLink.State.IN_SYNC, "last_run_at": now,
              "last_success_at": now, "common_snapshot": "pozol_hourly_1",
              "newest_received": "pozol_hourly_1", "newest_received_at": now - behind,
              "last_transfer": {"action": "incremental", "snapshot": "pozol_hourly_1",
                                "bytes": 5 << 20, "seconds": 12.5}}
    return link(source_host, target_host, name, **{**values, **changes})


def running(link_row: ReplicationLink) -> Operation:
    """A run of the link in progress (started, not run: no worker here)."""
    return Operation.objects.create(kind=steps.RUN.name, host=link_row.source_host,
                                    subject=f"replicate {link_row.name}", step="plan",
                                    status=Operation.Status.RUNNING,
                                    state={"link": link_row.pk})
