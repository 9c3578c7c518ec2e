"""The hosts API without a host: validation, the error format, and that hostile
input is refused with 400 before anything is recorded or any command runs."""

import logging
import time
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken
from apps.fleet import credentials
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.remote import keys
from apps.remote.keys import generate_keypair
from tests.racing import race

pytestmark = pytest.mark.django_db

PRIVATE_KEY, _ = generate_keypair("tests")
FINGERPRINT = "SHA256:" + "A" * 43

HOSTILE = ["a;b", "$(reboot)", "`id`", "x' OR '1'='1", 'a"b', "line\nbreak", "two words",
           "../..", "-oProxyCommand=sh", "ünïcødé", "a&&b", "", " "]


def valid_body(**changes) -> dict:
    body = {"name": "db1", "address": "127.0.0.9", "port": 22, "user": "root",
            "private_key": PRIVATE_KEY, "expected_fingerprint": FINGERPRINT}
    body.update(changes)
    return body


@pytest.mark.parametrize("field", ["name", "address", "user", "work_dir"])
@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_are_refused_and_nothing_runs(api, delivered, caplog, field, value):
    caplog.set_level(logging.DEBUG, logger="pozol.remote")
    response = api.post("/api/hosts/", valid_body(**{field: value}), format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["fields"]
    assert not Host.objects.exists() and not Operation.objects.exists()
    assert delivered == []
    assert [r for r in caplog.records if r.name == "pozol.remote"] == []


def test_a_port_out_of_range_is_refused(api):
    response = api.post("/api/hosts/", valid_body(port=70000), format="json")
    assert response.status_code == 400 and "port" in response.json()["error"]["fields"]


def test_garbage_instead_of_a_key_is_refused(api):
    response = api.post("/api/hosts/", valid_body(private_key="not a key"), format="json")
    assert response.status_code == 400
    assert "private_key" in response.json()["error"]["fields"]


def test_a_host_key_decision_is_required(api):
    body = valid_body()
    del body["expected_fingerprint"]
    response = api.post("/api/hosts/", body, format="json")
    assert response.status_code == 400
    assert "trust_on_first_use" in response.json()["error"]["fields"]["expected_fingerprint"][0]


def test_a_malformed_fingerprint_is_refused(api):
    response = api.post("/api/hosts/", valid_body(expected_fingerprint="MD5:aa"), format="json")
    assert response.status_code == 400


def test_adding_a_host_stores_the_key_encrypted_and_starts_discovery(
        api, delivered, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/hosts/", valid_body(), format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    host = Host.objects.get(pk=body["id"])
    assert PRIVATE_KEY not in str(body) and "private_key" not in body
    assert PRIVATE_KEY.split("\n")[1] not in host.private_key_encrypted
    assert host.ssh_target().private_key == PRIVATE_KEY
    assert body["operation"]["kind"] == "fleet.discover"
    assert delivered == [body["operation"]["id"]]


def test_a_generated_key_pair_shows_its_public_key(api, delivered):
    body = valid_body(generate_key=True)
    del body["private_key"]
    response = api.post("/api/hosts/", body, format="json")
    assert response.status_code == 201
    assert response.json()["public_key"].startswith("ssh-ed25519 ")


def test_both_a_key_and_generate_is_refused(api):
    response = api.post("/api/hosts/", valid_body(generate_key=True), format="json")
    assert response.status_code == 400


def test_a_duplicate_name_is_a_conflict(api, delivered):
    assert api.post("/api/hosts/", valid_body(), format="json").status_code == 201
    response = api.post("/api/hosts/", valid_body(address="127.0.0.10"), format="json")
    assert response.status_code == 409, response.json()
    assert response.json()["error"]["code"] == "host_exists"
    assert "name" in response.json()["error"]["fields"]


def test_confirming_a_fingerprint_the_host_did_not_present_pins_nothing(api, delivered):
    host_id = api.post("/api/hosts/", valid_body(), format="json").json()["id"]
    Host.objects.filter(pk=host_id).update(
        presented_host_key="ssh-ed25519 AAAA", presented_fingerprint=FINGERPRINT,
        host_key_state=Host.KeyState.AWAITING)
    response = api.post(f"/api/hosts/{host_id}/confirm-host-key/",
                        {"fingerprint": "SHA256:" + "B" * 43}, format="json")
    assert response.status_code == 400
    assert Host.objects.get(pk=host_id).host_key_state == Host.KeyState.AWAITING


def test_the_schema_and_docs_are_served(api, client, operator):
    schema = api.get("/api/schema/")
    assert schema.status_code == 200
    text = schema.content.decode()
    for path in ("/api/hosts/", "/api/hosts/{id}/discover/", "/api/hosts/{id}/datasets/",
                 "/api/operations/{id}/"):
        assert path in text
    client.force_login(operator)
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger-ui" in docs.content
    assert b"cdn" not in docs.content.lower()


def test_operations_list_and_detail(api, delivered):
    api.post("/api/hosts/", valid_body(), format="json")
    listing = api.get("/api/operations/").json()
    assert listing["count"] == 1
    detail = api.get(f"/api/operations/{listing['results'][0]['id']}/").json()
    assert detail["status"] == "pending" and detail["log"] == []


def test_an_operator_can_rotate_the_key_and_change_the_user(api, delivered):
    host_id = api.post("/api/hosts/", valid_body(), format="json").json()["id"]
    new_key, _ = generate_keypair("rotated")
    response = api.patch(f"/api/hosts/{host_id}/", {"user": "pozol", "private_key": new_key},
                         format="json")
    assert response.status_code == 200 and response.json()["user"] == "pozol"
    assert Host.objects.get(pk=host_id).ssh_target().private_key == new_key
    assert "private_key" not in response.json()


def test_address_and_host_key_cannot_be_changed_in_place(api, delivered):
    host_id = api.post("/api/hosts/", valid_body(), format="json").json()["id"]
    api.patch(f"/api/hosts/{host_id}/", {"address": "10.9.9.9", "host_key_state": "pinned"},
              format="json")
    host = Host.objects.get(pk=host_id)
    assert host.address == "127.0.0.9" and host.host_key_state == Host.KeyState.UNVERIFIED


def test_deleting_a_host_keeps_its_operations_as_history(api, delivered):
    created = api.post("/api/hosts/", valid_body(), format="json").json()
    assert api.delete(f"/api/hosts/{created['id']}/").status_code == 204
    operation = Operation.objects.get(pk=created["operation"]["id"])
    assert operation.host is None and operation.subject == "db1"


@pytest.mark.django_db(transaction=True)
def test_parallel_adds_of_one_name_give_one_host_and_conflicts(operator, delivered):
    """20 requests race for one name: one wins, the others hear 409, none 500."""
    _, raw = ApiToken.objects.issue(operator, "race")

    def add() -> int:
        client = APIClient(raise_request_exception=False)
        client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
        response = client.post("/api/hosts/", valid_body(), format="json")
        if response.status_code == 409:
            assert response.json()["error"]["fields"] == {
                "name": ["a host named db1 already exists"]}
        return response.status_code

    statuses = race(20, add)
    assert sorted(statuses) == [201] + [409] * 19
    assert Host.objects.count() == 1 and Operation.objects.count() == 1


KEYS = Path(__file__).parents[1] / "remote" / "fixtures" / "keys"


@pytest.mark.parametrize(("name", "bits"), [("rsa-16384.openssh", 16384),
                                            ("rsa-8200.pkcs8", 8200)])
def test_an_oversized_rsa_key_is_refused_at_once(api, name, bits):
    started = time.monotonic()
    response = api.post("/api/hosts/", valid_body(
        private_key=(KEYS / name).read_text()), format="json")
    assert response.status_code == 400
    assert f"{bits}-bit RSA key" in response.json()["error"]["fields"]["private_key"][0]
    assert time.monotonic() - started < 1


def test_an_8192_bit_rsa_key_is_accepted_quickly(api, delivered):
    started = time.monotonic()
    response = api.post("/api/hosts/", valid_body(
        private_key=(KEYS / "rsa-8192.openssh").read_text()), format="json")
    assert response.status_code == 201, response.json()
    assert time.monotonic() - started < 2


def test_a_pasted_text_longer_than_any_key_is_refused(api):
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "A" * 2_000_000
    response = api.post("/api/hosts/", valid_body(private_key=text), format="json")
    assert response.status_code == 400
    assert "no more than 16384 characters" in response.json()["error"]["fields"]["private_key"][0]


def test_the_sudoers_file_of_a_host_names_its_clusters_and_refuses_root_or_a_bad_login(
        api, replayed_host):
    # The replayed host is reached as root: it needs no rules, and says how to ask.
    root = api.get(f"/api/hosts/{replayed_host.pk}/sudoers/")
    assert root.status_code == 400 and root.json()["error"]["code"] == "root_login"

    answer = api.get(f"/api/hosts/{replayed_host.pk}/sudoers/", {"login": "pozol"})
    assert answer.status_code == 200, answer.content
    cluster = replayed_host.clusters.get()
    line = f"pozol ALL=({cluster.owner}) NOPASSWD: {cluster.bin_dir}/psql, "
    assert line in answer.json()["sudoers"]
    assert answer.json()["check"] is None  # no discovery through that login yet
    # The helper the run rule names trusts this host's key, and only it.
    public = keys.public_line_of(credentials.decrypt(replayed_host.private_key_encrypted))
    assert answer.json()["helper_path"] == "/usr/local/sbin/pozol-run"
    assert f"TRUSTED='{public}'" in answer.json()["helper"]
    assert f"HOST='{replayed_host.host_key_fingerprint}'" in answer.json()["helper"]

    for hostile in HOSTILE[:8]:
        refused = api.get(f"/api/hosts/{replayed_host.pk}/sudoers/", {"login": hostile})
        assert refused.status_code == 400 and "login" in refused.json()["error"]["fields"]


def test_no_helper_before_the_host_key_is_pinned(api, replayed_host):
    """The helper is made for the host's key: a host still awaiting its key's confirmation
    has none yet, and is told what to do first."""
    replayed_host.host_key = replayed_host.host_key_fingerprint = ""
    replayed_host.host_key_state = Host.KeyState.AWAITING
    replayed_host.save()
    refused = api.get(f"/api/hosts/{replayed_host.pk}/sudoers/", {"login": "pozol"})
    assert refused.status_code == 409, refused.content
    assert refused.json()["error"]["code"] == "host_key_not_pinned"
    assert "discover the host" in refused.json()["error"]["message"]
    # ... as the schema says (the fuzzer holds the API to it).
    documented = api.get("/api/schema/?format=json").json()["paths"][
        "/api/hosts/{id}/sudoers/"]["get"]["responses"]["409"]
    assert "host_key_not_pinned" in documented["description"]
    assert documented["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}


def test_the_sudoers_file_names_a_major_installed_with_no_cluster_yet(api, replayed_host):
    """A cluster PoZoL creates later (apps.provisioning) runs with the rule in place:
    the packaged major's programs, as the owner of the host's other clusters."""
    cluster = replayed_host.clusters.get()
    facts = replayed_host.facts
    facts["installed"] = {**(facts.get("installed") or {}),
                          "bin_dirs": {"17": "/usr/lib/postgresql/17/bin"}}
    replayed_host.save(update_fields=["facts"])
    answer = api.get(f"/api/hosts/{replayed_host.pk}/sudoers/", {"login": "pozol"})
    assert answer.status_code == 200, answer.content
    text = answer.json()["sudoers"]
    assert f"pozol ALL=({cluster.owner}) NOPASSWD: {cluster.bin_dir}/psql, " in text
    assert "/usr/lib/postgresql/17/bin/psql, /usr/lib/postgresql/17/bin/pg_ctl" in text

    facts["installed"]["bin_dirs"] = {"17": "/usr/lib/postgresql/17,bin"}
    replayed_host.save(update_fields=["facts"])
    refused = api.get(f"/api/hosts/{replayed_host.pk}/sudoers/", {"login": "pozol"})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "unnamable"
