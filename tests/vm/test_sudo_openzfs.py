"""The OpenZFS VM host reached as `pozol`, an ordinary user with the sudoers file PoZoL
prints (issue 21, section 3): discovery sees the packaged cluster under systemd as root
does, a snapshot works, and a rule taken away is named."""

from __future__ import annotations

import dataclasses

import pytest

from apps.fleet import services as fleet
from apps.ops.models import Operation
from apps.snapshots import services as snapshots
from tests.driving import drive
from tests.integration.conftest import register
from tests.vm.conftest import SUDOERS, install_sudoers, run_on
from tests.vm.test_openzfs_host import discovered

pytestmark = [pytest.mark.vm, pytest.mark.django_db(transaction=True)]

LOGIN = "pozol"


@pytest.fixture
def as_pozol(vm_host, vm_second_name, api):
    """The rules PoZoL prints for this host, installed; the VM's second name as pozol."""
    root = discovered(vm_host)
    answer = api.get(f"/api/hosts/{root.pk}/sudoers/", {"login": LOGIN})
    assert answer.status_code == 200, answer.content
    text = answer.json()["sudoers"]
    install_sudoers(vm_host, text)
    yield dataclasses.replace(vm_second_name, user=LOGIN), text
    run_on(vm_host, f"rm -f {SUDOERS}")


def test_discovery_and_a_snapshot_through_sudo_and_a_missing_rule_named(
        vm_host, as_pozol, delivered):
    login, text = as_pozol
    host = register(login)
    operation = drive(host.operations.get(), limit=300)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    host.refresh_from_db()
    assert host.facts["sudo"]["ok"] is True and host.facts["sudo"]["missing"] == []
    cluster = host.clusters.get()
    assert (cluster.packaged_as, cluster.systemd_unit) == ("17/main",
                                                           "postgresql@17-main.service")
    snapped = drive(snapshots.snapshot_now(host, cluster=cluster), limit=300)
    assert snapped.status == Operation.Status.SUCCEEDED, snapped.error
    name = snapped.state["snapshot"]
    assert f"tank/pg/data@{name}" in run_on(vm_host, "zfs list -H -t snapshot -o name")
    run_on(vm_host, f"zfs release -r pozol tank/pg@{name} 2>/dev/null; "
                    f"zfs destroy -r tank/pg@{name}")

    zfs_rule = next(line for line in text.splitlines()
                    if not line.startswith(("#", "Defaults")) and "/zfs" in line
                    and "/bin/sh" not in line)
    install_sudoers(vm_host, text.replace(zfs_rule + "\n", ""))
    drive(fleet.discover(host), limit=300)
    host.refresh_from_db()
    assert host.facts["sudo"]["ok"] is False
    [missing] = host.facts["sudo"]["missing"]
    assert "zfs" in missing.values() and "zfs and zpool" in missing["grants"], missing
