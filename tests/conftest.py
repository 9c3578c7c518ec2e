"""Fixtures shared by the whole suite: personas, an API client, the real fleet,
and a way to drive an Operation to its end in-process."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken
from apps.ops import engine
from tests.driving import drive

# Two checkouts testing on one machine each need their own subnet.
TEST_FLEET_SUBNET = os.environ.get("POZOL_TEST_FLEET_SUBNET", "127.0.88")


@pytest.fixture
def operator(django_user_model):
    return django_user_model.objects.create_user("olga", password="pw-olga-123", is_staff=True)


@pytest.fixture
def api(operator) -> APIClient:
    """An API client that authenticates as the operator with a real token."""
    _, raw = ApiToken.objects.issue(operator, "tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client


@pytest.fixture
def signed_in(client, operator):
    """Django's test client, signed in as the operator persona."""
    client.force_login(operator)
    return client


@pytest.fixture
def delivered(monkeypatch) -> list[int]:
    """Record step deliveries instead of sending them to Celery."""
    sent: list[int] = []
    monkeypatch.setattr(engine, "deliver", lambda op_id, countdown=0: sent.append(op_id))
    return sent


@pytest.fixture
def drive_operation(delivered):
    return drive


@pytest.fixture
def replayed_host(db):
    """A host whose facts were recorded from a replayed real zfs-fuse discovery."""
    from apps.fleet.models import Host
    from apps.fleet.steps import record_facts
    from apps.remote.gather import discover
    from tests.remote.fixtures.hosts import replay_transcript

    host = Host(name="db1", address="127.0.0.9", credential_kind="pasted",
                host_key_state=Host.KeyState.PINNED)
    host.set_private_key("unused")
    host.save()
    record_facts(host, discover(replay_transcript()).to_dict())
    return host


@pytest.fixture(scope="session")
def fleet_hosts():
    """Two real test hosts (zfs-fuse, sshd, PostgreSQL 15), for the whole session."""
    from apps.demo.fleet import down, up

    state_dir = Path(tempfile.mkdtemp(prefix="pozol-test-fleet-"))
    started = time.monotonic()
    try:
        hosts = up(2, state_dir=state_dir, subnet=TEST_FLEET_SUBNET)
        print(f"\ntest fleet up in {time.monotonic() - started:.1f}s at {state_dir}")
        yield hosts
    finally:
        down(state_dir)
