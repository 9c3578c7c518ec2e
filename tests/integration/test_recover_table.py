"""Lesson 61 on a real test host: a dropped table comes back from a snapshot.

A tiny table, a snapshot, DROP TABLE; the recovery clones the snapshot, moves the table
into the origin under a new name in one transaction and destroys its clone. A second
recovery into the same name is refused before anything is cloned, and a table the
snapshot never had fails cleanly, its clone destroyed too.
"""

from __future__ import annotations

import pytest

from apps.ops.models import Operation
from apps.snapshots.models import Snapshot
from tests.driving import drive
from tests.integration.test_drills import host, leftovers, snapshot_now  # noqa: F401
from tests.integration.test_snapshots import psql

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

TABLE = "pozol_recover_rows"
INTO = "pozol_recover_back"


@pytest.fixture
def dropped(host):  # noqa: F811
    """A 37-row table, a snapshot holding it, then the table dropped."""
    fleet_host, row = host
    psql(fleet_host, f"DROP TABLE IF EXISTS {INTO}")
    psql(fleet_host, f"CREATE TABLE {TABLE} (id int PRIMARY KEY, note text)")
    psql(fleet_host, f"INSERT INTO {TABLE} SELECT i, 'row ' || i FROM generate_series(1, 37) i")
    name = snapshot_now(row)
    psql(fleet_host, f"DROP TABLE {TABLE}")
    snapshot = Snapshot.objects.get(host=row, dataset=row.clusters.get().data_dataset.name,
                                    name=name)
    yield fleet_host, snapshot
    psql(fleet_host, f"DROP TABLE IF EXISTS {INTO}")


def recover(api, snapshot: Snapshot, **body) -> Operation:
    response = api.post(f"/api/snapshots/{snapshot.pk}/recover-table/", body, format="json")
    assert response.status_code == 202, response.content
    return drive(Operation.objects.get(pk=response.json()["id"]))


def test_a_dropped_table_comes_back_under_its_new_name_and_only_once(api, dropped):
    fleet_host, snapshot = dropped
    operation = recover(api, snapshot, database="postgres", table=f"public.{TABLE}", into=INTO)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert operation.result["rows"] == 37
    assert psql(fleet_host, f"SELECT count(*), sum(id) FROM {INTO}") == f"37|{37 * 38 // 2}"
    assert psql(fleet_host, f"SELECT to_regclass('{TABLE}') IS NULL") == "t"
    assert leftovers(fleet_host, "pozol-recover") == ""

    again = recover(api, snapshot, database="postgres", table=TABLE, into=INTO)
    assert again.status == Operation.Status.FAILED and again.error_code == "exists"
    assert psql(fleet_host, f"SELECT count(*) FROM {INTO}") == "37"

    missing = recover(api, snapshot, database="postgres", table="pozol_never_was")
    assert missing.status == Operation.Status.FAILED
    assert "pozol_never_was" in missing.error and "does not exist" in missing.error
    assert leftovers(fleet_host, "pozol-recover") == ""
    assert psql(fleet_host, "SELECT to_regclass('pozol_never_was_recovered') IS NULL") == "t"
