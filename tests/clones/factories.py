"""A host with a cluster whose data and WAL are on datasets with mountpoints, snapshots of
both, and clones in the database, without SSH."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from apps.clones.models import Clone
from apps.fleet.models import Dataset, Host, PgCluster
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
