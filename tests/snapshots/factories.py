"""A host with ZFS facts, datasets, a cluster and snapshots in the database, without SSH."""

from datetime import UTC, datetime

from django.utils import timezone

from apps.fleet.models import Dataset, Host, PgCluster
from apps.snapshots.models import Snapshot
from tests.benchmarks import factories

ZFS_FUSE = {"dialect": "zfs-fuse", "implementation": "zfs-fuse",
            "capabilities": {"multi_snapshot": False}}


def host(name: str = "db1", datasets=("tank", "tank/pg", "tank/pg/data", "tank/pg/wal"),
         zfs=ZFS_FUSE) -> Host:
    row = factories.host(name)
    row.facts = {"zfs": zfs}
    row.reachable, row.last_seen_at = True, timezone.now()
    row.save()
    for dataset in datasets:
        Dataset.objects.create(host=row, name=dataset)
    return row


def cluster(on: Host, data="tank/pg/data", wal="tank/pg/wal", **changes) -> PgCluster:
    return factories.cluster(on, data_dataset=on.datasets.get(name=data),
                             wal_dataset=on.datasets.get(name=wal) if wal else None, **changes)


def snapshot(on: Host, full_name: str = "tank/pg/data@pozol_manual_20261123T190000Z",
             **changes) -> Snapshot:
    dataset, _, name = full_name.partition("@")
    values = {"created_at": datetime(2026, 11, 23, 19, tzinfo=UTC), "used": 4096,
              "referenced": 1 << 20, "origin": Snapshot.Origin.POZOL,
              "properties": {"pozol:owner": "pozol"}, "seen_at": timezone.now(), **changes}
    return Snapshot.objects.create(host=on, dataset=dataset, name=name, **values)
