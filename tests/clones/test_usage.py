"""The clones tick's reading of a host (space and connections, one command) and idle
deletion, without SSH: the parsers on text as the hosts print it, the refresh with a
recorded answer, the idle choice by tenant and protection. The real reading is proven
on the test hosts: space in tests/e2e/test_customer_clones.py, connections and idle
deletion in tests/integration/test_clones.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.clones import usage
from apps.clones.models import Clone
from apps.remote.shell import Result
from apps.tenants import services as tenant_services
from tests.clones import factories
from tests.tenants import factories as tenants

# 127.0.81.1:6500 <- 127.0.0.1:40000 established; 127.0.81.1:6501 listening only;
# ::ffff:127.0.81.1:6502 established over IPv6.
TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0151007F:1964 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   105        0 1
   1: 0151007F:1965 00000000:0000 0A 00000000:00000000 00:00000000 00000000   105        0 2
  sl  local_address                         remote_address                        st
   0: 0000000000000000FFFF00000151007F:1966 0000000000000000FFFF00000100007F:9C41 01 0
   1: garbage
"""


def test_the_parsers_read_used_bytes_and_established_connections():
    assert usage.parse_used("tank/pozol_clones/a\t123456\nnoise\ntank/pozol_clones/b\t-\n") == {
        "tank/pozol_clones/a": 123456}
    established = usage.parse_established(TCP)
    assert established == {("127.0.81.1", 6500), ("127.0.81.1", 6502)}
    assert usage.connected("127.0.81.1", 6500, established)
    assert not usage.connected("127.0.81.1", 6501, established)
    assert not usage.connected("127.0.81.2", 6500, established)
    assert usage.connected("0.0.0.0", 6502, established)


@pytest.mark.django_db
def test_a_refresh_reads_every_clone_of_the_host_in_one_command():
    host = factories.host()
    factories.cluster(host)
    layout = _layout(host)
    busy = factories.clone(host, "busy", 6500, layout={**layout, "name": "busy", "port": 6500})
    quiet = factories.clone(host, "quiet", 6501, layout={**layout, "name": "quiet",
                                                          "port": 6501})
    sent = []

    def run(command, **_):
        sent.append(command.text)
        return Result(command.text, 0, "tank/pozol_clones/busy\t5000\n"
                                        f"tank/pozol_clones/quiet\t7000\n{usage.MARK}\n{TCP}",
                      "")

    assert usage.refresh(host, run) == 2
    assert len(sent) == 1 and "tank/pozol_clones/busy tank/pozol_clones/quiet" in sent[0]
    busy.refresh_from_db()
    quiet.refresh_from_db()
    assert (busy.used, quiet.used) == (5000, 7000)
    assert busy.active_at is not None and quiet.active_at is None


def _layout(host) -> dict:
    from apps.clones import services

    origin = services.origin_of(host, host.clusters.get())
    made = services._layout(host, services.settings_of(host), origin, "x", factories.SNAPSHOT,
                            6500, "dev")
    values = made.stored()
    values["listen"] = "127.0.81.1"
    return values


@pytest.mark.django_db
def test_idle_clones_of_a_tenant_with_idle_deletion_go_unless_protected():
    host = factories.host()
    factories.cluster(host)
    acme, other = tenants.tenant("Acme"), tenants.tenant("Other")
    tenant_services.set_quotas(acme, clone_idle_minutes=30)
    long_ago = timezone.now() - timedelta(hours=2)
    idle = factories.clone(host, "idle", 6500, tenant=acme, ready_at=long_ago)
    factories.clone(host, "used", 6501, tenant=acme, ready_at=long_ago,
                    active_at=timezone.now() - timedelta(minutes=5))
    factories.clone(host, "kept", 6502, tenant=acme, ready_at=long_ago,
                    protected_until=timezone.now() + timedelta(hours=1))
    factories.clone(host, "theirs", 6503, tenant=other, ready_at=long_ago)
    assert [c.name for c in usage.idle()] == ["idle"]
    started = usage.reap_idle()
    assert len(started) == 1 and started[0].kind == "clones.destroy"
    idle.refresh_from_db()
    assert idle.state == Clone.State.DESTROYING
