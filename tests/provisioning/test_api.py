"""The create and retire API on a host whose facts come from a replayed real discovery:
each bad input a clear 4xx with the field, the plan shown, nothing started by a plan."""

from __future__ import annotations

import pytest

from apps.clones.models import Clone
from apps.fleet.models import PoolReserve
from apps.ops.models import Operation
from apps.tuning.models import Profile

pytestmark = pytest.mark.django_db


def test_the_plan_changes_nothing_and_says_what_would_be_done(api, replayed_host):
    answer = api.post(f"/api/hosts/{replayed_host.pk}/clusters/plan/",
                      {"major": 15, "name": "app"}, format="json")
    assert answer.status_code == 200, answer.content
    plan = answer.json()
    assert plan["parent"] == "tank/postgres/app" and plan["port"] == 5432
    assert "--data-checksums" in plan["initdb"]
    assert plan["snapshot"].startswith("zfs snapshot -r tank/postgres/app@")
    assert not Operation.objects.exists()


def test_create_starts_one_operation_with_the_plan(api, replayed_host, delivered):
    answer = api.post(f"/api/hosts/{replayed_host.pk}/clusters/",
                      {"major": 15, "name": "app", "port": 6000}, format="json")
    assert answer.status_code == 202, answer.content
    operation = Operation.objects.get(pk=answer.json()["operation"]["id"])
    assert operation.kind == "provisioning.create_cluster" and operation.mutating
    assert operation.state["plan"]["port"] == 6000
    again = api.post(f"/api/hosts/{replayed_host.pk}/clusters/",
                     {"major": 15, "name": "app", "port": 6000}, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "cluster_exists"


def test_a_profile_gives_its_properties_and_settings(api, replayed_host):
    profile = Profile.objects.get(slug="analytics")
    plan = api.post(f"/api/hosts/{replayed_host.pk}/clusters/plan/",
                    {"major": 15, "name": "dw", "profile": profile.pk}, format="json").json()
    data = next(d for d in plan["datasets"] if d["role"] == "data")
    assert data["properties"]["recordsize"] == "128K"
    assert plan["settings"]["default_statistics_target"] == "500"
    assert plan["profile"] == profile.name


@pytest.mark.parametrize(("body", "status", "field", "code"), [
    ({"major": 13, "name": "app"}, 400, "major", "no_such_major"),
    ({"major": 15, "name": "a;b"}, 400, "name", "invalid"),
    ({"major": 15, "name": "app", "port": 5499}, 409, "port", "port_taken"),
    ({"major": 15, "name": "app", "port": 80}, 400, "port", None),
    ({"major": "15", "name": "app"}, 400, "major", None),
    ({"major": 15, "name": "app", "pool": "nope"}, 400, "pool", "no_such_pool"),
    ({"major": 15, "name": "app", "profile": 999999}, 400, "profile", None),
    ({"name": "app"}, 400, "major", None),
])
def test_bad_requests_are_refused_with_the_field(api, replayed_host, body, status, field, code):
    for path in ("clusters/plan/", "clusters/"):
        answer = api.post(f"/api/hosts/{replayed_host.pk}/{path}", body, format="json")
        assert answer.status_code == status, answer.content
        error = answer.json()["error"]
        assert field in (error["fields"] or {}), error
        if code:
            assert error["code"] == code
    assert not Operation.objects.exists()


def test_a_pool_without_room_is_refused(api, replayed_host):
    PoolReserve.objects.create(host=replayed_host, pool="tank", reserve_percent=99)
    answer = api.post(f"/api/hosts/{replayed_host.pk}/clusters/",
                      {"major": 15, "name": "app"}, format="json")
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "no_room"
    # Said in words, not as the refusal's repr.
    assert "(99% of the pool)" in answer.json()["error"]["message"]
    assert "Shortage(" not in answer.content.decode()


def test_a_port_a_clone_holds_is_not_offered(api, replayed_host):
    Clone.objects.create(host=replayed_host, cluster_data_dir="/x", name="c", port=5432,
                         role="r", password_encrypted="")
    plan = api.post(f"/api/hosts/{replayed_host.pk}/clusters/plan/",
                    {"major": 15, "name": "app"}, format="json").json()
    assert plan["port"] == 5433


def test_the_list_still_answers_get(api, replayed_host):
    rows = api.get(f"/api/hosts/{replayed_host.pk}/clusters/").json()["results"]
    assert [r["port"] for r in rows] == [5499]


def test_retire_alone_keeps_its_old_meaning(api, replayed_host):
    cluster = replayed_host.clusters.get()
    answer = api.post(f"/api/hosts/{replayed_host.pk}/retire-cluster/",
                      {"cluster": cluster.pk}, format="json")
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "running"
    replayed_host.clusters.update(running=False)
    answer = api.post(f"/api/hosts/{replayed_host.pk}/retire-cluster/",
                      {"cluster": cluster.pk}, format="json")
    assert answer.status_code == 204
    assert not replayed_host.clusters.exists()


def test_forgetting_a_down_cluster_is_refused_while_a_link_copies_it(api, replayed_host):
    from apps.fleet.models import Host
    from apps.replication.models import ReplicationLink

    cluster = replayed_host.clusters.get()
    replayed_host.clusters.update(running=False)
    far = Host.objects.create(name="far", address="127.0.0.10")
    ReplicationLink.objects.create(name="away", source_host=replayed_host,
                                   target_host=far, target_parent="tank/copies",
                                   cluster_data_dir=cluster.data_dir)
    answer = api.post(f"/api/hosts/{replayed_host.pk}/retire-cluster/",
                      {"cluster": cluster.pk}, format="json")
    assert answer.status_code == 409, answer.content
    assert answer.json()["error"]["code"] == "in_use" and "replication link away" in \
        answer.json()["error"]["message"]
    assert replayed_host.clusters.exists()


def test_retire_with_datasets_is_refused_while_something_depends(api, replayed_host):
    cluster = replayed_host.clusters.get()
    Clone.objects.create(host=replayed_host, cluster_data_dir=cluster.data_dir, name="c",
                         port=6000, role="r", password_encrypted="",
                         state=Clone.State.READY)
    answer = api.post(f"/api/hosts/{replayed_host.pk}/retire-cluster/",
                      {"cluster": cluster.pk, "stop": True, "datasets": "destroy"},
                      format="json")
    assert answer.status_code == 409, answer.content
    assert answer.json()["error"]["code"] == "in_use" and "clone c" in \
        answer.json()["error"]["message"]
    assert not Operation.objects.filter(kind="provisioning.retire_cluster").exists()


def test_retire_with_datasets_plans_the_parent_and_refuses_nonsense(api, replayed_host,
                                                                    delivered):
    cluster = replayed_host.clusters.get()
    url = f"/api/hosts/{replayed_host.pk}/retire-cluster/"
    both = api.post(url, {"cluster": cluster.pk, "stop": True, "datasets": "destroy",
                          "final_snapshot": True}, format="json")
    assert both.status_code == 400 and "final_snapshot" in both.json()["error"]["fields"]
    bad = api.post(url, {"cluster": cluster.pk, "datasets": "burn"}, format="json")
    assert bad.status_code == 400
    answer = api.post(url, {"cluster": cluster.pk, "stop": True, "datasets": "destroy"},
                      format="json")
    assert answer.status_code == 202, answer.content
    state = Operation.objects.get(pk=answer.json()["id"]).state
    assert state["destroy"] == ["tank/pg"] and state["stop"] is True


def test_retire_is_refused_while_its_wal_archive_is_on(api, replayed_host):
    from apps.wal.models import WalArchive

    cluster = replayed_host.clusters.get()
    WalArchive.objects.create(cluster=cluster, dataset="tank/pozol_wal/x",
                              state=WalArchive.State.ON)
    answer = api.post(f"/api/hosts/{replayed_host.pk}/retire-cluster/",
                      {"cluster": cluster.pk, "stop": True}, format="json")
    assert answer.status_code == 409 and "WAL archive" in answer.json()["error"]["message"]
