"""The snapshots API without a host: snapshot now, list (paged, filtered, sorted),
destroy with its guards, hold and release; hostile input refused with a 400 in the
API's error shape before any operation exists; all of it in the OpenAPI schema."""

import pytest

from apps.ops.models import Operation
from apps.snapshots.models import Snapshot
from tests.snapshots import factories

pytestmark = [pytest.mark.django_db]

HOSTILE = ["a;b", "$(reboot)", "`id`", "x' OR '1'='1", "line\nbreak", "-oProxyCommand=sh",
           "ünïcødé", "a" * 65, "tank/pg/data@x", "tank/../etc", "tank/pg data"]


@pytest.fixture
def db_host():
    return factories.host()


def snap_now(api, host, **body):
    return api.post(f"/api/hosts/{host.pk}/snapshots/", body, format="json")


def refused(response, status=400) -> dict:
    assert response.status_code == status, response.content
    assert not Operation.objects.exists()
    return response.json()["error"]


def test_snapshot_now_of_a_cluster_starts_one_recursive_snapshot(api, delivered, db_host):
    cluster = factories.cluster(db_host)
    response = snap_now(api, db_host, cluster=cluster.pk, label="before upgrade", hold=True)
    assert response.status_code == 202, response.content
    operation = Operation.objects.get(pk=response.json()["id"])
    assert operation.kind == "snapshots.take"
    state = operation.state
    assert state["plan"]["method"] == "recursive" and state["plan"]["root"] == "tank/pg"
    assert state["snapshot"].startswith("pozol_manual_") and state["snapshot"].endswith("Z")
    assert state["properties"] == {"pozol:owner": "pozol", "pozol:policy": "manual",
                                   "pozol:label": "before upgrade"}
    assert state["hold"] is True and operation.triggered_by.username == "olga"


def test_snapshot_now_of_a_dataset(api, delivered, db_host):
    response = snap_now(api, db_host, dataset="tank/pg/wal")
    assert response.status_code == 202
    assert Operation.objects.get().state["plan"]["method"] == "single"


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_dataset_names_are_refused(api, delivered, db_host, value):
    error = refused(snap_now(api, db_host, dataset=value))
    assert "dataset" in error["fields"]


@pytest.mark.parametrize("value", [v for v in HOSTILE if v not in ("tank/pg/data@x",
                                                                   "tank/../etc")])
def test_hostile_labels_are_refused(api, delivered, db_host, value):
    error = refused(snap_now(api, db_host, dataset="tank/pg", label=value))
    assert "label" in error["fields"]


@pytest.mark.parametrize("body", [
    {}, {"dataset": "tank/pg", "cluster": 1}, {"dataset": "tank/nope"}, {"dataset": 5},
    {"dataset": "tank/pg", "hold": "yes"}, {"dataset": "tank/pg", "checkpoint": True},
    {"cluster": 999999},
])
def test_bad_requests_are_refused(api, delivered, db_host, body):
    if body.get("cluster") == 1:
        body["cluster"] = factories.cluster(db_host).pk
    refused(snap_now(api, db_host, **body))


def test_a_cluster_of_another_host_is_refused(api, delivered, db_host):
    other = factories.cluster(factories.host("db2"))
    assert "cluster" in refused(snap_now(api, db_host, cluster=other.pk))["fields"]


def test_a_cluster_whose_wal_is_not_on_zfs_is_refused(api, delivered, db_host):
    cluster = factories.cluster(db_host, wal=None, wal_dir="/var/lib/pg_wal")
    error = refused(snap_now(api, db_host, cluster=cluster.pk))
    assert "not on a ZFS dataset" in error["fields"]["cluster"][0]
    inside = factories.cluster(db_host, port=5433, wal=None,
                               wal_dir="/tank/pg5433/data/pg_wal")
    assert snap_now(api, db_host, cluster=inside.pk).status_code == 202


def test_an_unknown_host_is_a_404(api, delivered):
    assert api.get("/api/hosts/999/snapshots/").status_code == 404
    assert api.post("/api/hosts/999/snapshots/", {"dataset": "tank"}).status_code == 404


def test_list_is_paged_filtered_and_sorted(api, db_host):
    other = factories.host("db2")
    factories.snapshot(other)
    big = factories.snapshot(db_host, "tank/pg/data@a", used=10, userrefs=1, holds=["pozol"])
    small = factories.snapshot(db_host, "tank/pg/wal@b", used=5, origin=Snapshot.Origin.HAND,
                               properties={})
    listing = api.get(f"/api/hosts/{db_host.pk}/snapshots/").json()
    assert listing["count"] == 2 and {r["full_name"] for r in listing["results"]} == {
        "tank/pg/data@a", "tank/pg/wal@b"}
    by_used = api.get(f"/api/hosts/{db_host.pk}/snapshots/?ordering=used").json()["results"]
    assert [r["id"] for r in by_used] == [small.pk, big.pk]
    held = api.get(f"/api/hosts/{db_host.pk}/snapshots/?held=true").json()["results"]
    assert [r["id"] for r in held] == [big.pk] and held[0]["held"] is True
    assert held[0]["holds"] == ["pozol"]
    hand = api.get(f"/api/hosts/{db_host.pk}/snapshots/?origin=hand").json()["results"]
    assert [r["id"] for r in hand] == [small.pk]
    assert api.get(f"/api/snapshots/?host={other.pk}").json()["count"] == 1
    assert api.get(f"/api/hosts/{db_host.pk}/snapshots/?origin=x").status_code == 400
    assert api.get(f"/api/hosts/{db_host.pk}/snapshots/?ordering=;drop").status_code == 400


@pytest.mark.parametrize(("changes", "code", "text"), [
    ({"userrefs": 1}, "held", "is held"),
    ({"clones": ["tank/clone1"]}, "has_clones", "has clones: tank/clone1"),
    ({"origin": "hand", "properties": {}}, "not_ours", "made by hand"),
    ({"origin": "received"}, "not_ours", "was received"),
])
def test_destroy_guards_are_409s_that_say_why(api, delivered, db_host, changes, code, text):
    snap = factories.snapshot(db_host, **changes)
    error = refused(api.delete(f"/api/snapshots/{snap.pk}/"), status=409)
    assert error["code"] == code and text in error["message"]


def test_destroy_of_a_hand_made_snapshot_when_forced(api, delivered, db_host):
    snap = factories.snapshot(db_host, origin="hand", properties={})
    assert api.delete(f"/api/snapshots/{snap.pk}/?force=maybe").status_code == 400
    response = api.delete(f"/api/snapshots/{snap.pk}/?force=true")
    assert response.status_code == 202
    assert Operation.objects.get().state == {"snapshot": snap.full_name, "force": True}


def test_held_is_refused_even_when_forced(api, delivered, db_host):
    snap = factories.snapshot(db_host, userrefs=2)
    assert refused(api.delete(f"/api/snapshots/{snap.pk}/?force=true"), 409)["code"] == "held"


def test_hold_and_release(api, delivered, db_host):
    snap = factories.snapshot(db_host)
    assert refused(api.post(f"/api/snapshots/{snap.pk}/release/"), 409)["code"] == "not_held"
    response = api.post(f"/api/snapshots/{snap.pk}/hold/")
    assert response.status_code == 202 and response.json()["kind"] == "snapshots.hold"
    Snapshot.objects.filter(pk=snap.pk).update(userrefs=1)
    assert api.post(f"/api/snapshots/{snap.pk}/release/").status_code == 202


def test_a_hold_under_other_tags_only_is_not_offered_for_release(
        api, signed_in, delivered, db_host):
    snap = factories.snapshot(db_host, userrefs=1)
    Snapshot.objects.filter(pk=snap.pk).update(holds=["keep"])
    answer = refused(api.post(f"/api/snapshots/{snap.pk}/release/"), 409)
    assert answer["code"] == "not_ours" and "held by keep, not by PoZoL" in answer["message"]
    assert f'aria-label="Release {snap.full_name}"' not in signed_in.get(
        f"/hosts/{db_host.pk}/snapshots/").content.decode()
    Snapshot.objects.filter(pk=snap.pk).update(holds=["keep", "pozol"])
    assert api.post(f"/api/snapshots/{snap.pk}/release/").status_code == 202


def test_the_schema_documents_snapshots(api):
    schema = api.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/hosts/{id}/snapshots/"]) or \
        {"get", "post"} <= set(paths["/api/hosts/{pk}/snapshots/"])
    assert "delete" in paths["/api/snapshots/{id}/"]
    assert "post" in paths["/api/snapshots/{id}/hold/"]


@pytest.mark.django_db(transaction=True)
def test_two_snapshots_now_in_one_second_give_one_operation_and_a_409(
        operator, delivered, monkeypatch):
    """Both requests once reported success; one snapshot existed, with the other
    request's label and hold (issue 19 §5). Now each gets its own or a clear 409."""
    from rest_framework.test import APIClient

    from apps.accounts.models import ApiToken
    from apps.snapshots import services
    from tests.racing import race

    monkeypatch.setattr(services.naming, "snapshot_name",
                        lambda at, policy=None: "pozol_manual_20261127T050000Z")
    host = factories.host(datasets=("tank", "tank/pg", "tank/pg/data", "tank/pg/wal",
                                    "tank/other"))
    cluster = factories.cluster(host)
    _, raw = ApiToken.objects.issue(operator, "race")
    labels = iter(["first", "second"])

    def take(**body) -> int:
        client = APIClient(raise_request_exception=False)
        client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
        response = client.post(f"/api/hosts/{host.pk}/snapshots/", body, format="json")
        if response.status_code == 409:
            assert "pozol_manual_20261127T050000Z" in response.json()["error"]["message"]
        return response.status_code

    statuses = race(2, lambda: take(cluster=cluster.pk, label=next(labels), hold=True))
    assert sorted(statuses) == [202, 409]
    assert Operation.objects.count() == 1
    # Another dataset in the same second is no conflict.
    assert take(dataset="tank/other") == 202
