"""Holds by tag, Direct I/O and block cloning on a real OpenZFS 2.3 host (the VM test
host, tests/vm/conftest.py): what the product records is read against what `zfs holds`,
`zfs get` and `zpool get` say over OpenSSH. Each test removes what it made."""

from __future__ import annotations

import pytest

from apps.fleet import services as fleet_services
from apps.ops.models import Operation
from apps.snapshots import services as snapshot_services
from tests.driving import drive
from tests.html import parse
from tests.vm.conftest import run_on
from tests.vm.test_openzfs_host import discovered

pytestmark = [pytest.mark.vm, pytest.mark.django_db(transaction=True)]


def rediscovered(host):
    operation = drive(fleet_services.discover(host), limit=300)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    host.refresh_from_db()
    return host


def tags(vm_host, snapshot: str) -> list[str]:
    """The tags `zfs holds -H` lists for one snapshot (the tag is the middle field)."""
    lines = run_on(vm_host, f"zfs holds -H {snapshot}").splitlines()
    return sorted(line.split("\t", 1)[1].rsplit("\t", 1)[0] for line in lines if line)


def test_holds_by_the_product_and_by_hand_are_listed_by_tag(vm_host, api, signed_in,
                                                             delivered):
    host = discovered(vm_host)
    operation = drive(snapshot_services.snapshot_now(host, cluster=host.clusters.get(),
                                                     hold=True), limit=300)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    name = operation.state["snapshot"]
    data, wal = f"tank/pg/data@{name}", f"tank/pg/wal@{name}"
    try:
        run_on(vm_host, f"zfs hold keep {data}")
        host = rediscovered(host)  # discovery lists the snapshots, then their holds
        listed = api.get(f"/api/hosts/{host.pk}/snapshots/?held=true").json()["results"]
        found = {row["full_name"]: row for row in listed}
        assert tags(vm_host, data) == ["keep", "pozol"]
        assert found[data]["holds"] == tags(vm_host, data) and found[data]["userrefs"] == 2
        assert found[wal]["holds"] == tags(vm_host, wal) == ["pozol"]
        page = signed_in.get(f"/hosts/{host.pk}/snapshots/").content.decode()
        assert "held by keep, pozol" in page
    finally:
        run_on(vm_host, f"zfs release keep {data}; zfs release -r pozol tank/pg@{name}; "
                        f"zfs destroy -r tank/pg@{name}")


def test_direct_always_and_block_cloning_are_discovered_and_advised(vm_host, api, signed_in,
                                                                    delivered):
    host = discovered(vm_host)
    try:
        run_on(vm_host, "zfs set direct=always tank/pg/data")
        host = rediscovered(host)
        recorded = {dataset.name: dataset.direct for dataset in host.datasets.all()}
        assert recorded["tank/pg/data"] == "always" == run_on(
            vm_host, "zfs get -H -o value direct tank/pg/data").strip()
        assert recorded["tank/pg/wal"] == "standard"
        pool = host.pools.get()
        assert pool.block_cloning == run_on(
            vm_host, "zpool get -H -o value feature@block_cloning tank").strip()
        assert pool.block_cloning in ("enabled", "active")
        findings = api.get(f"/api/hosts/{host.pk}/findings/").json()
        [finding] = [f for f in findings if f["id"] == "direct_io_always"]
        assert finding["subject"] == "tank/pg/data"
        page = parse(signed_in.get(f"/hosts/{host.pk}/datasets/").content)
        rows = {row[0]: row for row in page.find("table", id="datasets").rows()}
        assert rows["tank/pg/data"][10] == "always"

        run_on(vm_host, "zfs inherit direct tank/pg/data")
        host = rediscovered(host)
        findings = api.get(f"/api/hosts/{host.pk}/findings/").json()
        assert not [f for f in findings if f["id"] == "direct_io_always"]
    finally:
        run_on(vm_host, "zfs inherit direct tank/pg/data")
