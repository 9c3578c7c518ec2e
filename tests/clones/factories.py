"""A host with a cluster whose data and WAL are on datasets with mountpoints, snapshots of
both, and clones in the database, without SSH; and a replication link that carried the
cluster's snapshot and WAL archive to a second host."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from apps.clones.models import Clone
from apps.fleet.models import Dataset, Host, PgCluster
from apps.replication.models import ReplicationLink
from apps.wal.models import WalArchive
from tests.benchmarks import factories
from tests.snapshots import factories as snapshot_factories

SNAPSHOT = "pozol_manual_20261123T190000Z"


def host(name: str = "db1") -> Host:
    row = snapshot_factories.host(name, datasets=())
    for dataset, mountpoint in (("tank", "/tank"), ("tank/pg/data", "/tank/pg/data"),
                                ("tank/pg/wal", "/tank/pg/wal")):
        Dataset.objects.create(host=row, name=dataset, mountpoint=mountpoint)
    return row


def cluster(on: Host) -> PgCluster:
    return factories.cluster(on, data_dir="/tank/pg/data/pgdata", wal_dir="/tank/pg/wal/pg_wal",
                             data_dataset=on.datasets.get(name="tank/pg/data"),
                             wal_dataset=on.datasets.get(name="tank/pg/wal"))


def snapshots(on: Host, name: str = SNAPSHOT, **changes) -> None:
    """The same snapshot of the cluster's data and WAL datasets."""
    for dataset in ("tank/pg/data", "tank/pg/wal"):
        snapshot_factories.snapshot(on, f"{dataset}@{name}", **changes)


def clone(on: Host, name: str = "dev1", port: int = 6500, **changes) -> Clone:
    """A clone row as a finished creation leaves it."""
    values = {"cluster_data_dir": "/tank/pg/data/pgdata", "snapshot": SNAPSHOT,
              "role": "dev", "password_encrypted": "not-a-real-token",
              "state": Clone.State.READY, "ready_at": timezone.now(),
              "connection_string": f"postgresql://dev@{on.address}:{port}/postgres",
              "expires_at": timezone.now() + timedelta(hours=1), **changes}
    return Clone.objects.create(host=on, name=name, port=port, **values)


CARRIED = "pozol-carry-to-backup-1"


def link_world() -> dict:
    """db1 archives; its link sent a snapshot taken 10 minutes ago and the archive's
    segments 2-5 (archived a minute apart from then) to backup1."""
    source = host()
    origin = cluster(source)
    target = host("backup1")
    taken = timezone.now() - timedelta(minutes=10)
    archive = WalArchive.objects.create(
        cluster=origin, dataset="tank/pozol_wal/pg:data",
        directory="/tank/pozol_wal/pg:data", state=WalArchive.State.ON, archive_timeout=30,
        segment_size=16 * 2**20)
    archive.marks.create(snapshot="received1", lsn="0/2000100", taken_at=taken)
    for dataset in ("bk/pg/data", "bk/pg/wal"):
        snapshot_factories.snapshot(target, f"{dataset}@received1", created_at=taken)
    link = ReplicationLink.objects.create(
        name="to-backup", source_host=source, cluster_data_dir=origin.data_dir,
        sources=["tank/pg/data", "tank/pg/wal"], target_host=target, target_parent="bk",
        archive="tank/pozol_wal/pg:data", archive_snapshot=CARRIED,
        archive_listing={"timeline": 1, "segments": [
            [n, taken.timestamp() + 60 * (n - 1)] for n in (2, 3, 4, 5)]},
        archive_floor=taken.timestamp())
    return {"source": source, "target": target, "cluster": origin, "link": link,
            "archive": archive, "taken": taken}
