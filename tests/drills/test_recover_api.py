"""Recovering a dropped table through the API: bad names are 400s naming their field,
before any operation; a good request is one drills.recover_table operation."""

import pytest

from apps.ops.models import Operation
from apps.snapshots.models import Snapshot
from tests.clones import factories

pytestmark = [pytest.mark.django_db]

T = factories.SNAPSHOT
KIND = "drills.recover_table"


@pytest.fixture
def data():
    host = factories.host()
    factories.cluster(host)
    factories.snapshots(host)
    return Snapshot.objects.get(host=host, dataset="tank/pg/data", name=T)


def recover(api, snapshot, **body):
    return api.post(f"/api/snapshots/{snapshot.pk}/recover-table/", body, format="json")


def test_a_good_request_starts_one_operation_with_a_clone_of_its_own(api, delivered, data):
    response = recover(api, data, database="postgres", table="sales.orders")
    assert response.status_code == 202, response.content
    operation = Operation.objects.get(pk=response.json()["id"])
    assert operation.kind == KIND
    assert operation.state["target"] == {"database": "postgres", "schema": "sales",
                                         "table": "orders", "into": "orders_recovered"}
    assert operation.state["clone_name"].startswith("pozol-recover-")
    assert operation.state["layout"]["snapshot"] == T


@pytest.mark.parametrize("body, field", [
    ({"table": "orders"}, "database"),
    ({"database": "postgres"}, "table"),
    ({"database": "Post gres", "table": "orders"}, "database"),
    ({"database": "postgres", "table": "orders'; --"}, "table"),
    ({"database": "postgres", "table": "orders", "into": "x.y"}, "into"),
])
def test_bad_input_is_a_400_naming_the_field(api, data, body, field):
    response = recover(api, data, **body)
    assert response.status_code == 400, response.content
    assert field in str(response.json()), response.content
    assert not Operation.objects.filter(kind=KIND).exists()


def test_a_snapshot_missing_on_the_wal_dataset_is_refused(api):
    host = factories.host()
    factories.cluster(host)
    factories.snapshots(host)
    Snapshot.objects.filter(host=host, dataset="tank/pg/wal").delete()
    lone = Snapshot.objects.get(host=host, dataset="tank/pg/data")
    response = recover(api, lone, database="postgres", table="orders")
    assert response.status_code == 400, response.content
    assert "snapshot" in response.json()["error"]["fields"]


def test_a_recovery_on_a_pool_at_its_reserve_is_refused_with_the_figures(api, data):
    from apps.fleet.models import Dataset
    Dataset.objects.filter(host=data.host, name="tank").update(used=700 * 2**20,
                                                               available=300 * 2**20)
    response = recover(api, data, database="postgres", table="orders")
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "no_room" and "keeps a reserve of" in str(error)
    assert not Operation.objects.filter(kind=KIND).exists()


def test_a_recovery_carries_the_hosts_clone_quota_and_its_room_check(api, delivered, data):
    response = recover(api, data, database="postgres", table="orders")
    operation = Operation.objects.get(pk=response.json()["id"])
    assert operation.state["quota"] == 8 * 2**30
    assert operation.state["room"] == {"pools": ["tank"], "needed": 256 * 2**20,
                                       "what": "a table recovery"}
