"""Fixtures shared by the whole suite: personas, an API client, the real fleet,
and a way to drive an Operation to its end in-process."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest
from django.test import testcases
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken
from apps.ops import engine
from tests.driving import drive
from tests.parallel import worker_subnet
from tests.redis_server import redis_server  # noqa: F401  a fixture for every test

# Django's test server (live_server) sends a response's status line, each header line
# and the body in separate small writes. With Nagle's algorithm on, each write after
# the first waits for the client's delayed ACK (40 ms on Linux): a request took 48 ms
# against 4 ms with it off (50 GETs of /login/), and the fuzzer's 9,300 requests
# spent most of their time waiting. gunicorn sets TCP_NODELAY itself.
testcases.QuietWSGIRequestHandler.disable_nagle_algorithm = True

# Two checkouts testing on one machine each need their own subnet, and so does each
# pytest-xdist worker of one run (gw0 keeps the subnet, gw1 takes the next one).
TEST_FLEET_SUBNET = worker_subnet(os.environ.get("POZOL_TEST_FLEET_SUBNET", "127.0.88"))

# Tests on real hosts that change or read the kernel's vm.* sysctls, which every test
# host shares with this machine (two at once would read each other's values), form one
# group, run in order on one xdist worker. Every other module (on real hosts or not) is
# a group of its own, so a module's fixtures are set up once; each worker boots its own
# fleet (a session fixture, on its own subnet) the first time it runs a module that
# needs one.
KERNEL_GROUP = "real-hosts-kernel"
# The OpenZFS VM hosts (tests/vm/): one group per guest, so that the two may run on two
# workers, each booting its guest once.
VM_GROUP, VM21_GROUP = "real-hosts-vm", "real-hosts-vm21"
SHARED_KERNEL_MODULES = {
    "tests/benchmarks/test_run_on_a_host.py",
    "tests/demo/fleet/test_fleet.py",
    "tests/demo/fleet/test_private_etc.py",
    "tests/e2e/test_add_host_in_browser.py",
    "tests/e2e/test_follow_log.py",
    "tests/e2e/test_tuning_in_browser.py",
    "tests/integration/test_advisor.py",
    "tests/integration/test_cluster_owner.py",
    "tests/integration/test_tuning.py",
    "tests/pozol/test_readme.py",
}
# The groups that take longest go first, longest first (a worker takes the next group
# when it runs out, so the long ones must not start last: `--no-loadscope-reorder`
# keeps this order): the 2.3 guest's tests (20 to 35 minutes under emulation, by the
# machine), the 2.1 guest's (9 to 19), the kernel group (5 to 13), the fuzzer (3
# alone, 11 beside the guests). Then the other modules on real hosts, then the browser
# modules, then the rest.
FIRST = (VM_GROUP, VM21_GROUP, KERNEL_GROUP, "tests/accounts/test_api_fuzz.py")


def xdist_group_of(item: pytest.Item) -> str:
    path = item.nodeid.split("::", 1)[0]
    if path in SHARED_KERNEL_MODULES:
        return KERNEL_GROUP
    if path.startswith("tests/vm/"):
        return VM21_GROUP if _on_the_21_guest(item) else VM_GROUP
    return path


def _on_real_hosts(item: pytest.Item) -> bool:
    return "fleet_hosts" in getattr(item, "fixturenames", ()) or bool(
        item.get_closest_marker("fleet"))


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """Mark each test's xdist group before xdist reads the marks (--dist loadgroup), and
    once every plugin has ordered the tests, put the long groups first, then the modules
    on real hosts (a stable sort: pytest-django's order stays within each part)."""
    for item in items:
        item.add_marker(pytest.mark.xdist_group(xdist_group_of(item)))
    yield
    items.sort(key=_rank)


def _rank(item: pytest.Item) -> int:
    group = xdist_group_of(item)
    if group in FIRST:
        return FIRST.index(group)
    if _on_real_hosts(item):
        return len(FIRST)
    # The browser modules next: minutes each (the accessibility module 3 to 5), they
    # made a run's last five minutes on one worker when pytest-django's order (its
    # transactional tests last) left them at the end.
    return len(FIRST) + (1 if item.nodeid.startswith("tests/e2e/") else 2)


def _on_the_21_guest(item: pytest.Item) -> bool:
    """A test on the OpenZFS 2.1 guest: a group of its own (each guest is shut down after
    its last test: tests/vm/conftest.py)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return params.get("vm") == "zfs21" or "vm21_host" in getattr(item, "fixturenames", ())


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
def builtin_rules(db):
    """The built-in alert rules as their migration seeds them. A transactional test
    flushes the database, and under xdist one may run before this test on its worker."""
    from apps.alerts import rules

    rules.ensure()


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
    from apps.remote.keys import fingerprint, generate_keypair, public_line_of
    from tests.remote.fixtures.hosts import replay_transcript

    host_key = public_line_of(generate_keypair("db1's host key")[0])
    host = Host(name="db1", address="127.0.0.9", credential_kind="pasted",
                host_key_state=Host.KeyState.PINNED, host_key=host_key,
                host_key_fingerprint=fingerprint(host_key))
    # Never used to connect; the sudoers answer writes its public half in the helper,
    # which is made for the host key.
    host.set_private_key(generate_keypair("db1")[0])
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
