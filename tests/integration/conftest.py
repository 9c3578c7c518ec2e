"""Integration tests: the product against real test hosts over real SSH."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings as django_settings

from apps.demo.fleet.client import ssh
from apps.events import sending
from apps.fleet import services
from apps.fleet.models import Host
from apps.remote import ssh as product_ssh


def run_on(fleet_host, command: str, timeout: float = 60) -> str:
    """Run a command on a test host with OpenSSH, independently of the product's code."""
    return ssh(fleet_host, command, timeout=timeout)


def show(fleet_host, setting: str) -> str:
    """`SHOW setting` on a test host, by psql as the cluster's owner, over OpenSSH."""
    return run_on(fleet_host, (
        f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/psql -X -At "
        f"-h {fleet_host.pg_socket_dir} -p {fleet_host.pg_port} -d postgres "
        f"-c 'show {setting}'")).strip()


def register(fleet_host, **changes) -> Host:
    arguments = {
        "name": fleet_host.name, "address": fleet_host.address, "port": fleet_host.port,
        # The login PoZoL uses, where a test host has one beside root (tests/vm's 2.1 guest).
        "user": getattr(fleet_host, "login", fleet_host.user), "work_dir": fleet_host.work_dir,
        "authorized_keys_file": fleet_host.authorized_keys_path or "",
        "private_key": Path(fleet_host.private_key_path).read_text(),
        "expected_fingerprint": fleet_host.host_key_fingerprint,
    }
    arguments.update(changes)
    host, _ = services.add_host(**arguments)
    return host


@pytest.fixture
def enqueued(monkeypatch, settings) -> list[int]:
    """Event deliveries recorded instead of handed to Celery (a test attempts them
    itself, to a receiver on loopback, which the allowlist then admits)."""
    settings.POZOL = {**django_settings.POZOL, "ALERT_WEBHOOK_ALLOW": ["127.0.0.1/32"]}
    sent: list[int] = []
    monkeypatch.setattr(sending, "enqueue", lambda ids: sent.extend(ids))
    return sent


@pytest.fixture(autouse=True)
def fresh_ssh_pool():
    """Each test starts without pooled connections, as a fresh worker would."""
    product_ssh.close_all()
    yield
    product_ssh.close_all()
