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


# ---- as of a moment (issue 23) ------------------------------------------------------

@pytest.fixture
def archiving():
    """A cluster archiving, its snapshot taken 10 minutes ago, segments archived a minute
    apart from then on, as the last check recorded them."""
    from datetime import timedelta

    from django.utils import timezone

    from apps.wal.models import WalArchive

    host = factories.host()
    cluster = factories.cluster(host)
    taken = timezone.now() - timedelta(minutes=10)
    factories.snapshots(host, created_at=taken)
    segments = [[n, taken.timestamp() + 60 * (n - 1)] for n in (2, 3, 4, 5)]
    WalArchive.objects.create(
        cluster=cluster, dataset="tank/pozol_wal/pg:data", directory="/tank/pozol_wal/pg:data",
        state=WalArchive.State.ON, checked_at=timezone.now(), segment_size=16 * 2**20,
        listing={"timeline": 1, "segments": segments}, archive_timeout=60)
    return cluster, taken


def recover_at(api, cluster, **body):
    return api.post(f"/api/clusters/{cluster.pk}/recover-table/", body, format="json")


def test_a_moment_in_the_window_recovers_from_a_replayed_clone(api, delivered, archiving):
    from datetime import timedelta

    cluster, taken = archiving
    moment = (taken + timedelta(minutes=2)).isoformat()
    response = recover_at(api, cluster, database="postgres", table="orders", at=moment)
    assert response.status_code == 202, response.content
    operation = Operation.objects.get(pk=response.json()["id"])
    assert operation.kind == KIND and operation.state["snapshot"] == T
    recovery = operation.state["layout"]["recovery"]
    assert recovery["target"] == "time" and recovery["value"] == moment
    assert recovery["label"] == "pozol-pitr-" + operation.state["clone_name"]
    assert operation.state["moment"]["archive_timeout"] == 60
    assert "as of" in operation.subject


@pytest.mark.parametrize("body, field, words", [
    ({}, "at", "exactly one"),
    ({"at": "2026-11-20T14:06:00Z", "lsn": "0/1"}, "at", "exactly one"),
    ({"at": "2026-11-20T14:06:00"}, "at", "time zone"),
    ({"at": "yesterday"}, "at", ""),
    ({"lsn": "$(reboot)"}, "lsn", ""),
    ({"at": "2020-01-01T00:00:00Z"}, "at", "outside the recoverable window"),
    ({"at": "2999-01-01T00:00:00Z"}, "at", "in the future"),
    ({"restore_point": "nope"}, "restore_point", "no restore point"),
])
def test_a_bad_moment_is_a_400_naming_the_field(api, archiving, body, field, words):
    cluster, _ = archiving
    response = recover_at(api, cluster, database="postgres", table="orders", **body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert field in error["fields"] and words in error["message"] + str(error["fields"])
    assert not Operation.objects.filter(kind=KIND).exists()


def test_a_cluster_that_does_not_archive_is_a_409(api):
    host = factories.host()
    cluster = factories.cluster(host)
    response = recover_at(api, cluster, database="postgres", table="orders",
                          at="2026-11-20T14:06:00Z")
    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == "not_archiving"
    assert recover_at(api, type(cluster)(pk=cluster.pk + 999), database="postgres",
                      table="orders", at="2026-11-20T14:06:00Z").status_code == 404


def test_the_page_recovers_from_a_snapshot_or_as_of_a_moment(signed_in, archiving):
    from datetime import timedelta

    cluster, taken = archiving
    page = f"/drills/hosts/{cluster.host_id}/recover-table/"
    shown = signed_in.get(page)
    assert shown.status_code == 200 and "Recover a dropped table" in shown.text
    assert factories.SNAPSHOT in shown.text
    body = {"cluster": cluster.pk, "database": "postgres", "table": "orders", "into": ""}
    neither = signed_in.post(page, body)
    assert neither.status_code == 200 and "Give a snapshot or a moment" in neither.text
    naive = signed_in.post(page, {**body, "at": "2026-11-20T14:06:00"})
    assert naive.status_code == 200 and "time zone" in naive.text
    outside = signed_in.post(page, {**body, "at": "2020-01-01T00:00:00Z"})
    assert outside.status_code == 200 and "outside the recoverable window" in outside.text
    bad_name = signed_in.post(page, {**body, "table": "orders'; --",
                                     "at": (taken + timedelta(minutes=2)).isoformat()})
    assert bad_name.status_code == 200 and not Operation.objects.filter(kind=KIND).exists()
    made = signed_in.post(page, {**body, "at": (taken + timedelta(minutes=2)).isoformat()})
    assert made.status_code == 302, made.content
    operation = Operation.objects.get(kind=KIND)
    assert made["Location"] == f"/operations/{operation.pk}/"
    assert operation.state["layout"]["recovery"]["target"] == "time"
    snapshot = Snapshot.objects.get(host=cluster.host, dataset="tank/pg/data")
    Operation.objects.all().delete()
    made = signed_in.post(page, {**body, "snapshot": snapshot.pk})
    assert made.status_code == 302, made.content
    assert "recovery" not in Operation.objects.get(kind=KIND).state["layout"] or \
        Operation.objects.get(kind=KIND).state["layout"]["recovery"] is None
