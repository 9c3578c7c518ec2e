"""The links API without a host: make (cluster or dataset), list and filter, change
the settings but never the identity, run now, pause, resume, the rollback opt-in
with who and when, delete; hostile input refused with a 400 in the API's error shape
before any operation exists; all of it in the OpenAPI schema."""

from datetime import timedelta

import pytest

from apps.fleet.models import Pool
from apps.ops.models import Operation
from apps.replication.models import ReplicationLink
from tests.replication import factories
from tests.snapshots import factories as snapshot_factories

pytestmark = [pytest.mark.django_db]

HOSTILE = ["a;b", "$(reboot)", "`id`", "x' OR '1'='1", "line\nbreak", "-oProxyCommand=sh",
           "ünïcødé", "a b", "x" * 49]


@pytest.fixture
def hosts():
    return factories.source(), factories.target()


def body(hosts, **changes) -> dict:
    source, target = hosts
    return {"name": "main", "source_host": source.pk, "target_host": target.pk,
            "target_parent": "backup/db1",
            "cluster_data_dir": source.clusters.get().data_dir, **changes}


def make(api, hosts, **changes):
    return api.post("/api/replication-links/", body(hosts, **changes), format="json")


def refused(response, status=400) -> dict:
    assert response.status_code == status, response.content
    assert not Operation.objects.exists()
    return response.json()["error"]


def test_a_cluster_link_is_made_with_its_settings(api, hosts):
    response = make(api, hosts, mode="-i", interval_minutes=15, keep_hourly=24,
                    bandwidth_limit=10 << 20, lag_threshold_minutes=45)
    assert response.status_code == 201, response.content
    shown = response.json()
    assert shown["sources"] == ["tank/pg/data", "tank/pg/wal"]
    assert shown["mode"] == "-i" and shown["interval_minutes"] == 15
    assert shown["keep_hourly"] == 24 and shown["bandwidth_limit"] == 10 << 20
    assert shown["state"] == "new" and shown["last_run_at"] is None
    assert shown["lag"]["seconds"] is None and shown["lag"]["alert"] is False
    assert shown["lag"]["text"].startswith("never replicated")
    assert shown["running_operation"] is None and shown["rollback_opt_in"] is False
    assert "private_key_encrypted" not in shown
    assert not Operation.objects.exists()  # making a link touches no host
    assert ReplicationLink.objects.get().created_by.username == "olga"


def test_a_dataset_link(api, hosts):
    response = make(api, hosts, cluster_data_dir="", dataset="tank/pg")
    assert response.status_code == 201, response.content
    assert response.json()["sources"] == ["tank/pg"]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_names_are_refused(api, hosts, value):
    assert "name" in refused(make(api, hosts, name=value))["fields"]
    assert not ReplicationLink.objects.exists()


@pytest.mark.parametrize("value", [*HOSTILE[:7], "backup/../etc", "backup//x", "-backup",
                                   "backup@snap"])
def test_hostile_target_parents_are_refused(api, hosts, value):
    assert "target_parent" in refused(make(api, hosts, target_parent=value))["fields"]


@pytest.mark.parametrize("value", [*HOSTILE[:7], "tank/pg@x", "tank/nope"])
def test_hostile_datasets_are_refused(api, hosts, value):
    assert "dataset" in refused(make(api, hosts, cluster_data_dir="", dataset=value))["fields"]


@pytest.mark.parametrize(("field", "value"), [
    ("bandwidth_limit", 1), ("bandwidth_limit", 10**15), ("bandwidth_limit", -5),
    ("bandwidth_limit", "1M"), ("interval_minutes", -1), ("interval_minutes", 10**9),
    ("interval_minutes", 1.5), ("interval_minutes", "60"), ("lag_threshold_minutes", 0),
    ("lag_threshold_minutes", 10**8), ("keep_hourly", 10**6), ("keep_daily", -1),
    ("keep_monthly", True), ("mode", "-R"), ("mode", 1), ("after_policy", "yes"),
    ("compressed_streams", "yes"), ("compressed_streams", 1), ("compressed_streams", None),
    ("large_block_streams", "false"), ("large_block_streams", 0),
    ("large_block_streams", [True]),
    ("cluster_data_dir", "/nowhere"), ("cluster_data_dir", "/x;reboot"),
])
def test_absurd_settings_are_refused_with_the_field(api, hosts, field, value):
    assert field in refused(make(api, hosts, **{field: value}))["fields"]


def test_a_bandwidth_limit_the_source_cannot_apply_is_refused(api, replayed_host):
    """Issue 19: a limit was saved and silently not applied on a source with neither pv
    nor mbuffer. The replayed zfs-fuse host has neither: refused at save, with why."""
    hosts = replayed_host, factories.target()
    data_dir = replayed_host.clusters.get().data_dir
    error = refused(make(api, hosts, cluster_data_dir=data_dir, bandwidth_limit=1 << 20))
    assert "neither pv nor mbuffer" in error["fields"]["bandwidth_limit"][0]
    assert not ReplicationLink.objects.exists()
    assert make(api, hosts, cluster_data_dir=data_dir).status_code == 201
    address = f"/api/replication-links/{ReplicationLink.objects.get().pk}/"
    response = api.patch(address, {"bandwidth_limit": 1 << 20}, format="json")
    assert response.status_code == 400 and ReplicationLink.objects.get().bandwidth_limit is None
    replayed_host.facts["tools"]["mbuffer"] = "/usr/bin/mbuffer"
    replayed_host.save()
    assert api.patch(address, {"bandwidth_limit": 1 << 20}, format="json").status_code == 200


@pytest.mark.parametrize("changes", [
    {}, {"source_host": None}, {"target_host": 999999}, {"source_host": "1"},
    {"dataset": "tank/pg"},  # and a cluster: one of them, not both
])
def test_bad_bodies_are_refused(api, hosts, changes):
    data = body(hosts, **changes) if changes else {}
    assert api.post("/api/replication-links/", data, format="json").status_code == 400


def test_the_target_must_be_another_host_and_have_the_pool(api, hosts):
    source, _ = hosts
    assert "target_host" in refused(make(api, hosts, target_host=source.pk))["fields"]
    assert "target_parent" in refused(make(api, hosts, target_parent="nopool/x"))["fields"]


def test_a_taken_name_and_a_shared_target_are_409s(api, hosts):
    assert make(api, hosts).status_code == 201
    assert refused(make(api, hosts), 409)["fields"]["name"]
    error = refused(make(api, hosts, name="other"), 409)
    assert "link main already receives into backup/db1/pg" in error["message"]
    assert "target_parent" in error["fields"]


def test_list_filters(api, hosts):
    source, target = hosts
    third = factories.target("db3")
    factories.synced(source, target, "a")
    factories.link(source, third, "b", paused=True)
    factories.link(target, third, "c", sources=["backup"], cluster_data_dir="",
                   target_parent="backup/db2", state=ReplicationLink.State.FAILED)

    def names(query: str) -> list[str]:
        response = api.get(f"/api/replication-links/{query}")
        assert response.status_code == 200, response.content
        return [row["name"] for row in response.json()["results"]]

    assert names("") == ["a", "b", "c"]
    assert names(f"?source_host={source.pk}") == ["a", "b"]
    assert names(f"?target_host={third.pk}") == ["b", "c"]
    assert names("?state=failed") == ["c"] and names("?paused=true") == ["b"]
    for bad in ("?state=nope", "?paused=1", "?source_host=abc", "?target_host=",
                f"?source_host={2**64}"):
        assert api.get(f"/api/replication-links/{bad}").status_code == 400


def test_the_lag_and_last_transfer_of_a_synced_link(api, hosts):
    late = factories.synced(*hosts, behind=timedelta(hours=3), lag_threshold_minutes=60)
    shown = api.get(f"/api/replication-links/{late.pk}/").json()
    assert shown["lag"]["newest"] == "pozol_hourly_1" and shown["lag"]["alert"] is True
    assert 3 * 3600 <= shown["lag"]["seconds"] < 3 * 3600 + 60
    assert "over the 1 h threshold" in shown["lag"]["text"]
    assert shown["last_transfer"]["bytes"] == 5 << 20 and shown["state"] == "in_sync"


def test_settings_change_but_identity_does_not(api, hosts):
    link = factories.link(*hosts)
    address = f"/api/replication-links/{link.pk}/"
    response = api.patch(address, {"interval_minutes": 5, "bandwidth_limit": None,
                                   "keep_daily": 7}, format="json")
    assert response.status_code == 200, response.content
    link.refresh_from_db()
    assert (link.interval_minutes, link.bandwidth_limit, link.keep_daily) == (5, None, 7)
    for field, value in [("name", "other"), ("target_parent", "backup/x"),
                         ("source_host", hosts[1].pk), ("dataset", "tank/pg")]:
        error = refused(api.patch(address, {field: value}, format="json"))
        assert "cannot be changed" in error["fields"][field][0], error
    assert refused(api.patch(address, {"interval_minutes": -3}, format="json"))["fields"]
    assert api.patch(address, [1, 2], format="json").status_code == 400
    assert api.put(address, {"interval_minutes": 5}, format="json").status_code == 405
    link.refresh_from_db()
    assert link.name == "main" and link.target_parent == "backup/db1"


def test_run_now_pause_and_resume(api, delivered, hosts):
    link = factories.link(*hosts)
    address = f"/api/replication-links/{link.pk}/"
    response = api.post(address + "run/")
    assert response.status_code == 202, response.content
    operation = Operation.objects.get()
    assert operation.kind == "replication.run" and operation.state == {"link": link.pk}
    assert operation.host == hosts[0] and operation.triggered_by.username == "olga"
    assert api.get(address).json()["running_operation"] == operation.pk
    again = api.post(address + "run/")
    assert again.status_code == 409 and again.json()["error"]["code"] == "running"
    assert api.post(address + "pause/").json()["paused"] is True
    assert api.get("/api/replication-links/?paused=true").json()["count"] == 1
    assert api.post(address + "resume/").json()["paused"] is False


def test_the_rollback_opt_in_says_who_and_when(api, hosts):
    link = factories.link(*hosts)
    address = f"/api/replication-links/{link.pk}/rollback-opt-in/"
    shown = api.post(address).json()
    assert shown["rollback_opt_in"] is True and shown["rollback_opted_in_by"] == "olga"
    assert shown["rollback_opted_in_at"]
    shown = api.delete(address).json()
    assert shown["rollback_opt_in"] is False and shown["rollback_opted_in_by"] is None
    assert shown["rollback_opted_in_at"] is None


def test_delete_starts_the_removal_and_is_refused_while_running(api, delivered, hosts):
    link = factories.link(*hosts, held=["source:tank/pg/data@s1"])
    run = factories.running(link)
    error = api.delete(f"/api/replication-links/{link.pk}/").json()["error"]
    assert error["code"] == "running" and f"#{run.pk}" in error["message"]
    run.status = Operation.Status.SUCCEEDED
    run.save()
    response = api.delete(f"/api/replication-links/{link.pk}/")
    assert response.status_code == 202, response.content
    removal = Operation.objects.get(pk=response.json()["id"])
    assert removal.kind == "replication.remove" and removal.state["link"] == "main"
    assert removal.state["held"] == ["source:tank/pg/data@s1"]
    assert not ReplicationLink.objects.exists()
    assert api.get(f"/api/replication-links/{link.pk}/").status_code == 404


def test_unknown_links_are_404s(api):
    for method, suffix in [("get", ""), ("patch", ""), ("delete", ""), ("post", "run/"),
                           ("post", "pause/"), ("post", "rollback-opt-in/")]:
        assert getattr(api, method)(f"/api/replication-links/999999/{suffix}").status_code \
            == 404


def test_the_private_key_is_never_shown(api, hosts):
    link = factories.link(*hosts, public_key="ssh-ed25519 AAAA link-main",
                          private_key_encrypted="SECRET-CIPHERTEXT")
    for address in ("/api/replication-links/", f"/api/replication-links/{link.pk}/"):
        text = api.get(address).content.decode()
        assert "SECRET-CIPHERTEXT" not in text and "ssh-ed25519 AAAA link-main" in text


def test_the_schema_documents_links(api):
    schema = api.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/replication-links/"])
    assert {"get", "patch", "delete"} <= set(paths["/api/replication-links/{id}/"])
    assert "put" not in paths["/api/replication-links/{id}/"]
    for action in ("run", "pause", "resume"):
        assert "post" in paths[f"/api/replication-links/{{id}}/{action}/"]
    assert {"post", "delete"} <= set(paths["/api/replication-links/{id}/rollback-opt-in/"])
    assert "get" in paths["/api/replication-links/{id}/streams/"]
    shown = schema["components"]["schemas"]["ReplicationLink"]["properties"]
    assert "private_key_encrypted" not in shown and "lag" in shown
    assert {"compressed_streams", "large_block_streams", "large_blocks_sent"} <= set(shown)
    assert {"flags", "choices", "refusal"} <= set(
        schema["components"]["schemas"]["Stream"]["properties"])


OPENZFS = {"dialect": "openzfs", "implementation": "OpenZFS", "version": "2.3.9-0+deb13u1",
           "userland_version": "2.3.9-0+deb13u1", "kernel_version": "2.3.9-0+deb13u1",
           "capabilities": {"multi_snapshot": True}}


def openzfs_hosts():
    source = snapshot_factories.host("oz1", zfs=OPENZFS)
    snapshot_factories.cluster(source)
    target = snapshot_factories.host("oz2", datasets=("backup",), zfs=OPENZFS)
    Pool.objects.create(host=target, name="backup", health="ONLINE")
    return source, target


def test_the_stream_opt_outs_are_settings(api):
    hosts = openzfs_hosts()
    shown = make(api, hosts, compressed_streams=False).json()
    assert (shown["compressed_streams"], shown["large_block_streams"],
            shown["large_blocks_sent"]) == (False, True, None)
    address = f"/api/replication-links/{shown['id']}/"
    streams = api.get(address + "streams/").json()
    assert [s["source"] for s in streams] == ["tank/pg/data", "tank/pg/wal"]
    assert streams[0]["flags"] == ["-L"] and not streams[0]["raw"]
    assert [c["flag"] for c in streams[0]["choices"]] == ["-w", "-c", "-L"]
    assert streams[0]["choices"][0]["on"] is None  # no run has read the encryption yet
    assert "the link opts out" in streams[0]["choices"][1]["why"]
    shown = api.patch(address, {"compressed_streams": True, "large_block_streams": False},
                      format="json").json()
    assert shown["compressed_streams"] is True and shown["large_block_streams"] is False
    assert api.get(address + "streams/").json()[1]["flags"] == ["-c"]
    for bad in ("no", 0, None, {"on": True}):
        error = refused(api.patch(address, {"compressed_streams": bad}, format="json"))
        assert "compressed_streams" in error["fields"]
    assert ReplicationLink.objects.get().compressed_streams is True


def test_large_blocks_are_fixed_once_the_link_has_sent(api):
    link = factories.link(*openzfs_hosts(), large_blocks_sent=True,
                          source_encryption={"tank/pg/data": "aes-256-gcm",
                                             "tank/pg/wal": "off"})
    address = f"/api/replication-links/{link.pk}/"
    error = refused(api.patch(address, {"large_block_streams": False}, format="json"), 409)
    assert error["code"] == "fixed"
    assert "its copies were received with -L" in error["fields"]["large_block_streams"][0]
    assert api.patch(address, {"large_block_streams": True, "compressed_streams": False},
                     format="json").status_code == 200
    data, wal = api.get(address + "streams/").json()
    assert data["flags"] == ["-w"] and data["text"].startswith("-w (-w on: the dataset is "
                                                               "encrypted (aes-256-gcm)")
    assert wal["flags"] == ["-L"] and "kept as the link's first send" in wal["text"]


def test_streams_need_both_hosts_discovered(api, hosts):
    link = factories.link(*hosts)
    hosts[1].facts = {}
    hosts[1].save()
    response = api.get(f"/api/replication-links/{link.pk}/streams/")
    assert response.status_code == 409 and "run discovery" in response.json()["error"]["message"]
    assert api.get("/api/replication-links/999999/streams/").status_code == 404
