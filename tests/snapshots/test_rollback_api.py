"""Rolling a cluster back through the API: refusals before any operation, then one."""

from datetime import UTC, datetime

import pytest

from apps.ops.models import Operation
from tests.snapshots import factories

pytestmark = [pytest.mark.django_db]

T = "pozol_manual_20261123T190000Z"


@pytest.fixture
def pair():
    host = factories.host()
    factories.cluster(host)
    data = factories.snapshot(host, f"tank/pg/data@{T}")
    factories.snapshot(host, f"tank/pg/wal@{T}")
    return host, data


def newer(host, name="pozol_manual_20261123T200000Z", **changes):
    at = datetime(2026, 11, 23, 20, tzinfo=UTC)
    return [factories.snapshot(host, f"{ds}@{name}", created_at=at, **changes)
            for ds in ("tank/pg/data", "tank/pg/wal")]


def rollback(api, snapshot, **body):
    return api.post(f"/api/snapshots/{snapshot.pk}/rollback/", body, format="json")


def refused(response, status, code):
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert not Operation.objects.filter(kind="snapshots.rollback").exists()
    return response.json()["error"]


def test_the_newest_pair_rolls_back_as_one_operation(api, delivered, pair):
    host, data = pair
    response = rollback(api, data)
    assert response.status_code == 202, response.content
    operation = Operation.objects.get(pk=response.json()["id"])
    assert operation.kind == "snapshots.rollback" and operation.step == "stop"
    assert operation.state["datasets"] == ["tank/pg/data", "tank/pg/wal"]
    assert operation.state["snapshot"] == T and operation.state["destroy_newer"] is False


def test_newer_snapshots_need_a_yes(api, delivered, pair):
    host, data = pair
    newer(host)
    error = refused(rollback(api, data), 409, "newer_snapshots")
    assert "2 newer snapshots" in error["message"]
    assert rollback(api, data, destroy_newer=True).status_code == 202


@pytest.mark.parametrize("changes, code", [
    ({"userrefs": 1}, "held"),
    ({"clones": ["tank/clone"]}, "has_clones"),
])
def test_a_newer_snapshot_that_may_not_go_refuses_even_with_a_yes(api, delivered, pair, changes,
                                                                  code):
    host, data = pair
    newer(host, **changes)
    error = refused(rollback(api, data, destroy_newer=True), 409, code)
    assert error["message"].startswith("cannot destroy a newer snapshot")


def test_half_a_pair_or_a_dataset_of_no_cluster_is_refused(api, delivered, pair):
    host, data = pair
    host.snapshots.filter(dataset="tank/pg/wal").delete()
    refused(rollback(api, data), 409, "not_a_pair")
    other = factories.snapshot(host, f"tank@{T}")
    assert "holds no PostgreSQL cluster" in refused(rollback(api, other), 400, "invalid")["message"]


@pytest.mark.parametrize("body", [{"destroy_newer": "yes"}, {"destroy_newer": 1}, []])
def test_a_malformed_body_is_a_400(api, delivered, pair, body):
    refused(rollback(api, pair[1], **body) if isinstance(body, dict) else
            api.post(f"/api/snapshots/{pair[1].pk}/rollback/", body, format="json"),
            400, "invalid")
