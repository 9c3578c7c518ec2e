"""The pool_capacity alert on a real test host: a pool filled past 80% by data that
only a snapshot holds raises it, naming what snapshots hold (usedbysnapshots, read
by discovery); freeing the snapshot and discovering again resolves it.

The filled pool is a second, small one made for the test (a 256 MiB sparse file):
filling the host's 1 GiB `tank` would mean writing ~800 MB, and zfs-fuse keeps
32 MiB back on any pool, so a smaller one never gets past about 75%. The pool is
destroyed afterwards: the hosts are shared by the whole session.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.alerts.models import Alert
from apps.fleet import services
from apps.ops.models import Operation
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_snapshots import discovered, run_anyway
from tests.waiting import wait_until

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

POOL = "pozolfill"
WRITTEN_MIB = 210


def sync_pool(fleet_host) -> None:
    """Make zfs-fuse apply frees now: a snapshot is a sync task, which waits for the
    open transaction group; otherwise a delete shows only after its ~30 s timeout."""
    run_on(fleet_host, f"zfs snapshot {POOL}@sync && zfs destroy {POOL}@sync")


def zfs_number(fleet_host, prop: str, name: str) -> int:
    return int(run_on(fleet_host, f"zfs get -Hp -o value {prop} {name}").strip())


def capacity(fleet_host) -> int:
    return int(run_on(fleet_host, f"zpool list -H -o cap {POOL}").strip().rstrip("%"))


def discover(host) -> None:
    operation = drive(services.discover(host))
    assert operation.status == Operation.Status.SUCCEEDED, operation.error


def open_alert(host) -> Alert | None:
    return host.alerts.filter(kind="pool_capacity", resolved_at=None).first()


def test_a_pool_full_of_snapshot_data_raises_the_alert_and_freeing_it_resolves_it(
        fleet_hosts):
    fleet_host = fleet_hosts[0]
    host = discovered(fleet_host)
    assert open_alert(host) is None
    where = Path(fleet_host.work_dir).parent
    disk, mnt = where / f"{POOL}.img", where / f"{POOL}-mnt"
    try:
        run_on(fleet_host, (
            f"truncate -s 256M {disk} && zpool create -m {mnt} {POOL} {disk} 2>&1 && "
            f"zfs create -o compression=off {POOL}/data && "
            f"dd if=/dev/urandom of={mnt}/data/blob bs=1M count={WRITTEN_MIB} status=none && "
            f"zfs snapshot {POOL}/data@held && rm {mnt}/data/blob"))
        sync_pool(fleet_host)
        held = zfs_number(fleet_host, "usedbysnapshots", f"{POOL}/data")
        assert held >= WRITTEN_MIB << 20 and capacity(fleet_host) > 80

        discover(host)
        alert = open_alert(host)
        assert alert is not None
        assert alert.message.startswith(
            f"pool {POOL} is {capacity(fleet_host)}% full; snapshots hold ")
        assert f": {POOL}/data {held / (1 << 20):.0f} MiB" in alert.message
        assert "tank" not in alert.message  # the host's own pool is nearly empty
        assert host.datasets.get(name=f"{POOL}/data").usedbysnapshots == held

        run_on(fleet_host, f"zfs destroy {POOL}/data@held")
        assert wait_until(lambda: sync_pool(fleet_host) or capacity(fleet_host) <= 80, 60, 1)
        discover(host)
        assert open_alert(host) is None
        assert Alert.objects.get(pk=alert.pk).resolved_at is not None
    finally:
        # zfs-fuse answers "pool is busy" for a while after heavy writes on a loaded machine.
        assert wait_until(lambda: destroyed(fleet_host), 60, 1)
        run_anyway(fleet_host, f"rm -rf {disk} {mnt}")


def destroyed(fleet_host) -> bool:
    run_anyway(fleet_host, f"zpool destroy -f {POOL}")
    return POOL not in run_on(fleet_host, "zpool list -H -o name").split()
