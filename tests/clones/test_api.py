"""The clones API without a host: make (from a snapshot or "now"), the password in the
creation's answer only, list and filter, show, destroy (409 while protected), and each
host's clone settings; hostile input refused with a 400 in the API's error shape before
any operation exists; all of it in the OpenAPI schema."""

from datetime import timedelta

import pytest
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

from apps.clones.models import Clone, CloneHostSettings
from apps.ops.models import Operation
from tests.clones import factories

pytestmark = [pytest.mark.django_db]

HOSTILE = ["a;b", "$(reboot)", "`id`", "x' OR '1'='1", 'say"hi', "line\nbreak", "dev\n",
           "-oProxyCommand=sh", "ünïcødé", "a b", "x" * 41, "Upper"]


@pytest.fixture
def host():
    row = factories.host()
    factories.cluster(row)
    factories.snapshots(row)
    return row


def body(on, **changes) -> dict:
    return {"host": on.pk, "cluster": on.clusters.get().pk,
            "snapshot": factories.SNAPSHOT, "name": "dev1", **changes}


def make(api, on, **changes):
    return api.post("/api/clones/", body(on, **changes), format="json")


def refused(response, status=400) -> dict:
    assert response.status_code == status, response.content
    assert not Operation.objects.exists()
    assert not Clone.objects.exists()
    return response.json()["error"]


def test_a_clone_is_started_and_its_password_shown_once(api, host):
    response = make(api, host, ttl_minutes=90, protected_minutes=30, role="app_user")
    assert response.status_code == 202, response.content
    assert response["Cache-Control"] == "no-store"
    answer = response.json()
    clone = Clone.objects.get()
    assert answer["password"] == clone.decrypted_password() and len(answer["password"]) >= 20
    assert answer["operation"]["kind"] == "clones.create"
    assert answer["operation"]["status"] == "pending"
    shown = answer["clone"]
    assert shown["id"] == clone.pk and shown["name"] == "dev1" and shown["role"] == "app_user"
    assert shown["state"] == "creating" and shown["snapshot"] == factories.SNAPSHOT
    assert shown["port"] == 6500 and shown["protected"] is True
    assert shown["last_operation"] == answer["operation"]["id"]
    assert shown["created_by"] == "olga" and shown["used"] is None
    assert abs(clone.expires_at - clone.created_at - timedelta(minutes=90)) < timedelta(
        seconds=5)
    for later in (api.get(f"/api/clones/{clone.pk}/"), api.get("/api/clones/")):
        assert later.status_code == 200
        assert answer["password"] not in later.content.decode()
        assert "password" not in later.content.decode()


def test_without_a_snapshot_the_clone_is_made_from_one_taken_now(api, host):
    without = {key: value for key, value in body(host).items() if key != "snapshot"}
    response = api.post("/api/clones/", without, format="json")
    assert response.status_code == 202, response.content
    operation = Operation.objects.get()
    assert operation.state["take_snapshot"] is True
    assert operation.state["snapshot"] == Clone.objects.get().snapshot
    assert operation.step == "snapshot"


def test_an_empty_name_gets_one_made_up(api, host):
    response = make(api, host, name="")
    assert response.status_code == 202, response.content
    assert response.json()["clone"]["name"].startswith("clone-")


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_names_are_refused(api, host, value):
    assert "name" in refused(make(api, host, name=value))["fields"]


@pytest.mark.parametrize("value", [*(v for v in HOSTILE if len(v) < 41), "x" * 64,
                                   "postgres", "pg_monitor", ""])
def test_hostile_roles_are_refused(api, host, value):
    assert "role" in refused(make(api, host, role=value))["fields"]


@pytest.mark.parametrize("value", ["a;b", "$(id)", "x@y", "tank/pg/data@x", "-rf", "nope",
                                   "line\nbreak", ""])
def test_snapshots_not_of_the_cluster_are_refused(api, host, value):
    assert "snapshot" in refused(make(api, host, snapshot=value))["fields"]


@pytest.mark.parametrize("field", ["ttl_minutes", "protected_minutes"])
@pytest.mark.parametrize("value", [0, -5, 10**12, 30 * 24 * 60 + 1, "60", 1.5, True])
def test_absurd_spans_are_refused(api, host, field, value):
    assert field in refused(make(api, host, **{field: value}))["fields"]


@pytest.mark.parametrize("field, value", [("host", 10**9), ("host", "1"), ("cluster", 10**9),
                                          ("cluster", None), ("name", 5), ("role", ["dev"])])
def test_wrong_types_and_unknown_objects_are_refused(api, host, field, value):
    assert field in refused(make(api, host, **{field: value}))["fields"]


def test_a_cluster_of_another_host_is_refused(api, host):
    other = factories.host("db2")
    factories.cluster(other)
    error = refused(make(api, host, cluster=other.clusters.get().pk))
    assert "not on this host" in error["fields"]["cluster"][0]


def test_an_exhausted_port_range_is_a_conflict(api, host):
    CloneHostSettings.objects.create(host=host, port_min=6500, port_max=6500)
    factories.clone(host, "taken", port=6500)
    response = make(api, host)
    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == "no_port"
    assert not Operation.objects.exists()


def test_a_port_a_running_drill_holds_is_not_given_to_a_clone(api, host):
    from apps.drills.models import DrillRun

    CloneHostSettings.objects.create(host=host, port_min=6500, port_max=6501)
    factories.clone(host, "taken", port=6500)
    DrillRun.objects.create(host=host, cluster_data_dir=host.clusters.get().data_dir,
                            check_query="select 1", port=6501)
    response = make(api, host)
    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == "no_port"
    assert not Operation.objects.exists()


def test_the_list_filters_by_host_state_and_cluster(api, host):
    other = factories.host("db2")
    factories.clone(host, "a", port=6500)
    factories.clone(host, "b", port=6501, state=Clone.State.DESTROYED)
    factories.clone(other, "c", port=6500, cluster_data_dir="/elsewhere")

    def names(query: str) -> set[str]:
        response = api.get(f"/api/clones/{query}")
        assert response.status_code == 200, response.content
        return {row["name"] for row in response.json()["results"]}

    assert names("") == {"a", "b", "c"}
    assert names(f"?host={host.pk}") == {"a", "b"}
    assert names("?state=ready") == {"a", "c"}
    assert names("?cluster_data_dir=/elsewhere") == {"c"}
    for bad in ("?host=abc", "?state=gone", "?host=", f"?host={2**64}"):
        assert api.get(f"/api/clones/{bad}").status_code == 400, bad


def test_the_size_is_what_the_listing_found(api, host):
    clone = factories.clone(host)
    host.datasets.create(name="tank/pozol_clones/dev1", used=12 << 20)
    host.datasets.create(name="tank/pozol_clones/dev10", used=1)
    assert api.get(f"/api/clones/{clone.pk}/").json()["used"] == 12 << 20


def test_destroy_starts_an_operation(api, host):
    clone = factories.clone(host)
    response = api.delete(f"/api/clones/{clone.pk}/")
    assert response.status_code == 202, response.content
    assert response.json()["kind"] == "clones.destroy"
    clone.refresh_from_db()
    assert clone.state == Clone.State.DESTROYING
    assert api.delete(f"/api/clones/{clone.pk}/").status_code == 409  # busy


def test_a_protected_clone_is_not_destroyed(api, host):
    clone = factories.clone(host, protected_until=timezone.now() + timedelta(hours=2))
    response = api.delete(f"/api/clones/{clone.pk}/")
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "protected" and "protected until" in error["message"]
    assert not Operation.objects.exists()
    clone.refresh_from_db()
    assert clone.state == Clone.State.READY


def test_unknown_clones_are_404(api):
    assert api.get("/api/clones/999/").status_code == 404
    assert api.delete("/api/clones/999/").status_code == 404


def test_anonymous_is_refused(client, host):
    clone = factories.clone(host)
    assert client.get("/api/clones/").status_code in (401, 403)
    assert client.delete(f"/api/clones/{clone.pk}/").status_code in (401, 403)
    assert client.get(f"/api/hosts/{host.pk}/clone-settings/").status_code in (401, 403)


# ---- the host's clone settings -------------------------------------------------------------

def settings_body(**changes) -> dict:
    return {"port_min": 7000, "port_max": 7099, "listen_address": "10.0.0.5",
            "allowed_networks": ["10.0.0.0/8", "2001:db8::/32"], **changes}


def test_settings_default_until_the_operator_sets_them(api, host):
    shown = api.get(f"/api/hosts/{host.pk}/clone-settings/").json()
    assert shown == {"port_min": 6500, "port_max": 6599, "listen_address": None,
                     "allowed_networks": [], "memory_limit": None, "uid_base": 1_900_000_000,
                     "clone_quota": 8 * 2**30,
                     "effective_allowed_networks": ["127.0.0.0/8"]}
    assert not CloneHostSettings.objects.exists()


def test_settings_are_saved_and_used_by_the_next_clone(api, host):
    response = api.put(f"/api/hosts/{host.pk}/clone-settings/", settings_body(), format="json")
    assert response.status_code == 200, response.content
    assert response.json()["effective_allowed_networks"] == ["10.0.0.0/8", "2001:db8::/32"]
    assert api.get(f"/api/hosts/{host.pk}/clone-settings/").json() == response.json()
    make(api, host)
    clone = Clone.objects.get()
    assert clone.port == 7000
    assert clone.layout["listen"] == "10.0.0.5"
    assert clone.layout["allowed"] == ["10.0.0.0/8", "2001:db8::/32"]
    assert clone.layout["os_uid"] == 1_900_000_000 + 7000  # the base plus its port


def test_the_clone_uid_base_is_the_operators_per_host(api, host):
    body = {**settings_body(), "uid_base": 3_000_000}
    response = api.put(f"/api/hosts/{host.pk}/clone-settings/", body, format="json")
    assert response.status_code == 200, response.content
    left_out = api.put(f"/api/hosts/{host.pk}/clone-settings/", settings_body(), format="json")
    assert left_out.json()["uid_base"] == 3_000_000  # left out: unchanged
    make(api, host)
    assert Clone.objects.get().layout["os_uid"] == 3_007_000
    for bad in (1000, 2**31, "x", True):
        refused = api.put(f"/api/hosts/{host.pk}/clone-settings/",
                          {**settings_body(), "uid_base": bad}, format="json")
        assert refused.status_code == 400 and "uid_base" in str(refused.json()), bad


@pytest.mark.parametrize("changes, field", [
    ({"port_min": 80}, "port_min"), ({"port_max": 70000}, "port_max"),
    ({"port_min": 7100, "port_max": 7000}, "port_max"), ({"port_min": "7000"}, "port_min"),
    ({"port_min": True}, "port_min"), ({"port_max": -1}, "port_max"),
    ({"memory_limit": 1}, "memory_limit"), ({"memory_limit": 2**70}, "memory_limit"),
    ({"clone_quota": 2**20}, "clone_quota"), ({"clone_quota": 2**70}, "clone_quota"),
    ({"clone_quota": "1G"}, "clone_quota"),
    ({"listen_address": "10.0.0.300"}, "listen_address"),
    ({"listen_address": "$(id)"}, "listen_address"),
    ({"allowed_networks": ["10.0.0.0/33"]}, "allowed_networks"),
    ({"allowed_networks": ["999.1.1.1/8"]}, "allowed_networks"),
    ({"allowed_networks": ["10.1.2.3/8"]}, "allowed_networks"),
    ({"allowed_networks": ["10.0.0.1"]}, "allowed_networks"),
    ({"allowed_networks": ["; rm -rf /"]}, "allowed_networks"),
    ({"allowed_networks": ["10.0.0.0/8\nhost all all 0.0.0.0/0 trust"]}, "allowed_networks"),
    ({"allowed_networks": "10.0.0.0/8"}, "allowed_networks"),
    ({"allowed_networks": [5]}, "allowed_networks"),
    ({"allowed_networks": ["10.0.0.0/8"] * 65}, "allowed_networks"),
])
def test_absurd_settings_are_refused(api, host, changes, field):
    response = api.put(f"/api/hosts/{host.pk}/clone-settings/", settings_body(**changes),
                       format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert not CloneHostSettings.objects.exists()


def test_settings_of_an_unknown_host_are_404(api):
    assert api.get("/api/hosts/999/clone-settings/").status_code == 404
    assert api.put("/api/hosts/999/clone-settings/", settings_body(),
                   format="json").status_code == 404


def test_the_endpoints_are_in_the_schema():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    paths = schema["paths"]
    assert set(paths["/api/clones/"]) >= {"get", "post"}
    assert set(paths["/api/clones/{id}/"]) >= {"get", "delete"}
    assert set(paths["/api/hosts/{id}/clone-settings/"]) >= {"get", "put"}
    created = paths["/api/clones/"]["post"]["responses"]["202"]
    assert "password" in str(schema["components"]["schemas"]["CloneCreated"])
    assert created
    shown = schema["components"]["schemas"]["Clone"]["properties"]
    assert not {"password", "password_encrypted"} & set(shown)
