"""Which addresses and work directories a host may have, through the API, the
form and the model alike (README, "Adding hosts")."""

import pytest
from django.core.exceptions import ValidationError

from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.remote.keys import generate_keypair

pytestmark = pytest.mark.django_db

PRIVATE_KEY, _ = generate_keypair("tests")

REFUSED_ADDRESSES = [
    "0", "0.0.0.0", "::", "169.254.169.254", "169.254.0.1", "fe80::1", "224.0.0.1",
    "ff02::1", "255.255.255.255", "240.0.0.1", "::ffff:169.254.169.254",
    "0:0:0:0:0:ffff:a9fe:a9fe",  # 169.254.169.254, mapped into IPv6
    # numbers the C resolver reads as IPv4 addresses
    "127.1", "0x7f.1", "2130706433", "0251.0376.0251.0376", "1.2.3", "db.123",
    # not names
    "a..b", "-db", "db-.example", ".db", "db.", "a" * 64 + ".example", "a_b", "fe80::1%eth0",
]
# The field's older pattern wants an address to begin and end with a letter or
# digit, so IPv6 loopback is written in full here (README, "Adding hosts").
ACCEPTED_ADDRESSES = ["127.0.84.3", "0:0:0:0:0:0:0:1", "10.0.0.5", "192.168.1.20",
                      "2001:db8::5", "fd00::1", "0:0:0:0:0:ffff:a00:5", "db1",
                      "db-1.example.com", "1e100.net"]
REFUSED_WORK_DIRS = ["/var/lib/../etc", "/var/lib/pozol/..", "..", "relative/dir", "pozol",
                     "/var/lib/po\x00zol", "/var/lib\n/pozol", "/var/lib/po zol", "/tmp/$(id)"]


def body(**changes) -> dict:
    data = {"name": "db1", "address": "127.0.0.9", "port": 22, "user": "root",
            "private_key": PRIVATE_KEY, "trust_on_first_use": True}
    data.update(changes)
    return data


@pytest.mark.parametrize("address", REFUSED_ADDRESSES)
def test_the_api_refuses_addresses_that_are_not_one_hosts(api, delivered, address):
    response = api.post("/api/hosts/", body(address=address), format="json")
    assert response.status_code == 400, response.json()
    assert list(response.json()["error"]["fields"]) == ["address"]
    assert not Host.objects.exists() and not Operation.objects.exists()


@pytest.mark.parametrize("address", ACCEPTED_ADDRESSES)
def test_the_api_accepts_names_and_usable_addresses(api, delivered, address):
    response = api.post("/api/hosts/", body(address=address), format="json")
    assert response.status_code == 201, response.json()
    assert Host.objects.get().address == address


@pytest.mark.parametrize("work_dir", REFUSED_WORK_DIRS)
def test_the_api_refuses_work_dirs_the_remote_layer_would_refuse(api, delivered, work_dir):
    response = api.post("/api/hosts/", body(work_dir=work_dir), format="json")
    assert response.status_code == 400, response.json()
    assert list(response.json()["error"]["fields"]) == ["work_dir"]
    assert not Host.objects.exists()


@pytest.mark.parametrize("work_dir", REFUSED_WORK_DIRS)
def test_changing_the_work_dir_follows_the_same_rule(api, delivered, work_dir):
    host_id = api.post("/api/hosts/", body(), format="json").json()["id"]
    response = api.patch(f"/api/hosts/{host_id}/", {"work_dir": work_dir}, format="json")
    assert response.status_code == 400, response.json()
    assert Host.objects.get().work_dir == "/var/lib/pozol"



def form(**changes) -> dict:
    data = {"name": "db2", "address": "10.0.0.5", "port": 22, "user": "root",
            "work_dir": "/var/lib/pozol", "key_source": "generate"}
    data.update(changes)
    return data


@pytest.mark.parametrize(("field", "value"),
                         [("address", a) for a in REFUSED_ADDRESSES]
                         + [("work_dir", w) for w in REFUSED_WORK_DIRS])
def test_the_form_refuses_the_same_values(signed_in, delivered, field, value):
    response = signed_in.post("/hosts/add/", form(**{field: value}))
    assert response.status_code == 200
    assert list(response.context["form"].errors) == [field]
    assert not Host.objects.exists() and delivered == []


def test_the_form_accepts_a_loopback_address(signed_in, delivered):
    response = signed_in.post("/hosts/add/", form(address="127.0.84.3"))
    assert response.status_code == 302 and Host.objects.get().address == "127.0.84.3"


@pytest.mark.parametrize(("field", "value"),
                         [("address", "169.254.169.254"), ("work_dir", "/var/../etc")])
def test_the_model_refuses_them_too(field, value):
    host = Host(name="db1", address="127.0.0.9", credential_kind="pasted")
    host.set_private_key("unused")
    setattr(host, field, value)
    with pytest.raises(ValidationError) as refused:
        host.full_clean()
    assert list(refused.value.message_dict) == [field]
