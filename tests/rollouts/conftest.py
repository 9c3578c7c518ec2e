import pytest

from apps.fleet.models import Host
from apps.fleet.steps import record_facts


@pytest.fixture
def second_host(replayed_host):
    """Another host with the same replayed facts."""
    host = Host(name="db2", address="127.0.0.10", credential_kind="pasted",
                host_key_state=Host.KeyState.PINNED)
    host.set_private_key("unused")
    host.save()
    record_facts(host, replayed_host.facts)
    return host
