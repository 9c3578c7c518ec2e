"""A cluster rolled back to its snapshot on a real test host: the rollback point an
operator takes before `pg_upgrade --link` (the test hosts carry one PostgreSQL major,
so the "upgrade" here is rows written after the snapshot)."""

from __future__ import annotations

import pytest

from apps.common.errors import Conflict
from apps.ops.models import Operation
from apps.snapshots import services
from apps.snapshots.models import Snapshot
from tests.driving import drive
from tests.integration.test_snapshots import discovered, psql, run_anyway, zfs_snapshots
from tests.waiting import wait_until

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

TABLE = "pozol_rollback"


def snapshot_now(host, cluster) -> str:
    """Snapshot now, again in the next second if this second's name is taken."""
    taken: list[Operation] = []

    def take() -> bool:
        try:
            taken.append(drive(services.snapshot_now(host, cluster=cluster)))
        except Conflict:
            return False
        return True

    assert wait_until(take, 5, 0.2)
    assert taken[0].status == Operation.Status.SUCCEEDED, taken[0].error
    return taken[0].state["snapshot"]


def test_a_cluster_rolls_back_to_its_snapshot_once_newer_ones_are_allowed_to_go(
        fleet_hosts, delivered):
    fleet_host = fleet_hosts[0]
    psql(fleet_host, f"DROP TABLE IF EXISTS {TABLE}; CREATE TABLE {TABLE} (id int); "
                     f"INSERT INTO {TABLE} SELECT generate_series(1, 100)")
    host = discovered(fleet_host)
    cluster = host.clusters.get()
    point = snapshot_now(host, cluster)
    try:
        psql(fleet_host, f"INSERT INTO {TABLE} SELECT generate_series(101, 250)")
        later = snapshot_now(host, cluster)
        target = Snapshot.objects.get(host=host, dataset="tank/pg/data", name=point)

        with pytest.raises(Conflict) as refused:
            services.rollback(target)
        assert refused.value.code == "newer_snapshots"
        assert f"tank/pg/data@{later}" in str(refused.value)

        operation = drive(services.rollback(target, destroy_newer=True))
        assert operation.status == Operation.Status.SUCCEEDED, operation.error
        assert psql(fleet_host, f"SELECT count(*) FROM {TABLE}") == "100"
        on_host = zfs_snapshots(fleet_host)
        assert {f"tank/pg/data@{point}", f"tank/pg/wal@{point}"} <= set(on_host)
        assert not {f"tank/pg/data@{later}", f"tank/pg/wal@{later}"} & set(on_host)
        assert not Snapshot.objects.filter(host=host, name=later).exists()
        assert operation.log_lines.filter(text__contains="destroyed the newer snapshots").exists()
    finally:
        psql(fleet_host, f"DROP TABLE IF EXISTS {TABLE}")
        run_anyway(fleet_host, f"zfs destroy -r tank/pg@{point}")
