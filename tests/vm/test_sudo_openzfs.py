"""The OpenZFS VM host reached as `pozol`, an ordinary user with the sudoers file and
the helper PoZoL prints (issue 21, section 3): discovery sees the packaged cluster under
systemd as root does, a snapshot works, a rule taken away is named, and the login
itself can run nothing as root that PoZoL did not sign."""

from __future__ import annotations

import dataclasses

import pytest

from apps.fleet import services as fleet
from apps.ops.models import Operation
from apps.snapshots import services as snapshots
from tests.driving import drive
from tests.integration.conftest import register
from tests.vm.conftest import HELPER, SUDOERS, install_helper, install_sudoers, run_on
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
    install_helper(vm_host, answer.json()["helper"])
    yield dataclasses.replace(vm_second_name, user=LOGIN), text
    run_on(vm_host, f"rm -rf {SUDOERS} {HELPER} /var/lib/pozol-run")


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

    # The login on its own: sudo lets it run the helper only, and the helper runs no
    # script that the control plane did not sign.
    as_login = f"su -s /bin/sh {LOGIN} -c "
    refused = run_on(vm_host, as_login + "'sudo -n /usr/sbin/zfs list; echo status=$?' 2>&1")
    assert "status=1" in refused and "sudo:" in refused, refused
    forged = run_on(vm_host, as_login + f"'sudo -n {HELPER} {'0' * 32} 9999999999 AAAA id; "
                    "echo status=$?' 2>&1")
    assert "status=126" in forged and "refused: bad signature" in forged, forged

    cluster_rule = next(line for line in text.splitlines()
                        if line.startswith(f"{LOGIN} ALL=(postgres)"))
    install_sudoers(vm_host, text.replace(cluster_rule + "\n", ""))
    drive(fleet.discover(host), limit=300)
    host.refresh_from_db()
    assert host.facts["sudo"]["ok"] is False
    [missing] = host.facts["sudo"]["missing"]
    assert missing["rule"] == "cluster:postgres" and "superuser" in missing["grants"], missing
