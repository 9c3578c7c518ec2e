"""Failures against real hosts are clear and leave nothing half-made."""

import pytest
from django.test import Client

from apps.alerts.models import Alert
from apps.fleet import services
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.remote.keys import generate_keypair, public_line_of
from tests.conftest import TEST_FLEET_SUBNET
from tests.driving import drive
from tests.html import parse
from tests.integration.conftest import register

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def test_a_changed_host_key_is_refused_and_stops_all_work(fleet_hosts, delivered):
    host = register(fleet_hosts[0])
    assert drive(host.operations.get()).status == "succeeded"
    impostor = public_line_of(generate_keypair("impostor")[0])
    Host.objects.filter(pk=host.pk).update(host_key=impostor)  # as if the host's key changed

    operation = drive(services.discover(host))
    host.refresh_from_db()
    assert (operation.status, operation.error_code) == ("failed", "host_key_changed")
    assert host.host_key_state == Host.KeyState.CHANGED
    assert host.presented_fingerprint == fleet_hosts[0].host_key_fingerprint
    assert Alert.objects.get(host=host, resolved_at=None).kind == "host_key_changed"
    assert host.datasets.count() > 0  # the last good picture is kept

    refused = drive(services.discover(host))
    assert refused.error_code == "host_key_changed"
    assert not refused.log_lines.filter(level="command").exists()

    forgotten = drive(services.accept_changed_host_key(host))
    host.refresh_from_db()
    assert forgotten.result == {"needs_confirmation": fleet_hosts[0].host_key_fingerprint}
    assert host.host_key_state == Host.KeyState.AWAITING
    confirmed = drive(services.confirm_host_key(host, fleet_hosts[0].host_key_fingerprint))
    assert confirmed.status == "succeeded"
    assert not Alert.objects.filter(host=host, resolved_at=None).exists()


def test_an_unexpected_fingerprint_pins_nothing(fleet_hosts, delivered):
    host = register(fleet_hosts[0], expected_fingerprint="SHA256:" + "x" * 43)
    operation = drive(host.operations.get())
    host.refresh_from_db()
    assert (operation.status, operation.error_code) == ("failed", "host_key_mismatch")
    assert fleet_hosts[0].host_key_fingerprint in operation.error
    assert host.host_key_state == Host.KeyState.REJECTED and host.host_key == ""
    assert not host.pools.exists() and not host.datasets.exists()


def test_trust_on_first_use_pins_what_the_host_presents(fleet_hosts, delivered):
    host = register(fleet_hosts[1], expected_fingerprint="", trust_on_first_use=True)
    assert drive(host.operations.get()).status == "succeeded"
    host.refresh_from_db()
    assert host.host_key_fingerprint == fleet_hosts[1].host_key_fingerprint


def test_without_a_decision_the_fingerprint_awaits_confirmation(fleet_hosts, delivered):
    host = register(fleet_hosts[1], expected_fingerprint="")
    operation = drive(host.operations.get())
    host.refresh_from_db()
    assert operation.status == "succeeded" and host.host_key_state == Host.KeyState.AWAITING
    assert host.presented_fingerprint == fleet_hosts[1].host_key_fingerprint
    assert not host.datasets.exists()


def test_an_unreachable_host_fails_cleanly(fleet_hosts, delivered):
    host = register(fleet_hosts[0], name="ghost", address="127.0.88.250")
    operation = drive(host.operations.get())
    host.refresh_from_db()
    assert (operation.status, operation.error_code) == ("failed", "unreachable")
    assert "127.0.88.250" in operation.error
    assert host.reachable is False and host.last_error_code == "unreachable"
    assert not host.pools.exists()


def test_a_refused_key_fails_cleanly(fleet_hosts, delivered):
    wrong_key, _ = generate_keypair("stranger")
    host = register(fleet_hosts[0], name="stranger", private_key=wrong_key)
    operation = drive(host.operations.get())
    host.refresh_from_db()
    assert (operation.status, operation.error_code) == ("failed", "auth_failed")
    assert host.reachable is False and not host.datasets.exists()
    assert Operation.objects.filter(host=host).count() == 1


def banner_of(client, host: Host) -> str:
    return parse(client.get(f"/hosts/{host.pk}/").content).find("div", id="reach-banner").text


def test_a_host_that_stops_answering_raises_an_alert_until_it_answers_again(
        fleet_hosts, delivered, operator):
    """Real sshd: reached, then pointed at an address where nothing listens (as if
    the host went away), then back."""
    client = Client()
    client.force_login(operator)
    fleet_host = fleet_hosts[0]
    host = register(fleet_host)
    assert drive(host.operations.get()).status == "succeeded"
    assert not parse(client.get(f"/hosts/{host.pk}/").content).find_all(id="reach-banner")

    nowhere = f"{TEST_FLEET_SUBNET}.250"  # in this run's subnet, nothing listens there
    Host.objects.filter(pk=host.pk).update(address=nowhere)
    failed = drive(services.discover(host))
    assert (failed.status, failed.error_code) == ("failed", "unreachable")
    alert = Alert.objects.get(host=host, resolved_at=None)
    assert alert.kind == "unreachable" and nowhere in alert.message
    host.refresh_from_db()
    banner = banner_of(client, host)
    assert "Not reachable at the last discovery" in banner and nowhere in banner
    assert "possibly stale" in banner and "Discover now" in banner
    assert host.datasets.exists()  # the last picture is kept, and shown as such
    overview = parse(client.get("/").content).find("table", id="hosts").rows()[0]
    assert overview[1] == "unreachable" and overview[-1] == "1"

    Host.objects.filter(pk=host.pk).update(address=fleet_host.address)
    assert drive(services.discover(host)).status == "succeeded"
    alert.refresh_from_db()
    assert alert.resolved_at is not None
    assert parse(client.get("/").content).find("table", id="hosts").rows()[0][-1] == "—"


def test_a_host_never_reached_says_why_and_what_to_do(fleet_hosts, delivered, operator):
    client = Client()
    client.force_login(operator)
    nowhere = f"{TEST_FLEET_SUBNET}.251"
    host = register(fleet_hosts[0], name="never", address=nowhere)
    assert drive(host.operations.get()).error_code == "unreachable"
    host.refresh_from_db()
    banner = banner_of(client, host)
    assert "has not reached this host yet" in banner and nowhere in banner
    assert Alert.objects.get(host=host, resolved_at=None).kind == "unreachable"
    datasets = client.get(f"/hosts/{host.pk}/datasets/").content.decode()
    assert "Not known: the host has not been reached" in datasets
    assert "No pools found" not in datasets
