"""A real host without ZFS is still a valid host: discovery succeeds and says so.

The host is this machine itself behind a throwaway sshd: zfs and zpool are
installed but no ZFS is running in its namespace, which is what an operator
sees on a server whose pool is not imported or whose ZFS is missing.
"""

import pytest

from apps.fleet import services
from apps.remote.keys import fingerprint
from tests.driving import drive
from tests.remote.sshd import running_sshd

pytestmark = [pytest.mark.ssh, pytest.mark.django_db(transaction=True)]


def test_a_host_without_zfs_is_discovered_cleanly(tmp_path, delivered):
    with running_sshd(tmp_path) as sshd:
        host, operation = services.add_host(
            name="plain", address=sshd.address, port=sshd.port, user=sshd.user,
            work_dir=str(tmp_path), private_key=sshd.client_key,
            expected_fingerprint=fingerprint(sshd.host_key))
        operation = drive(operation)
    host.refresh_from_db()
    assert operation.status == "succeeded", operation.error
    assert host.facts["zfs"] is None and host.facts["zfs_absent_reason"]
    assert not host.pools.exists() and not host.datasets.exists()
    assert host.facts["cpus"] >= 1 and host.facts["mem_total"] > 0
    for cluster in host.clusters.all():
        assert cluster.data_dataset is None  # whatever PostgreSQL runs here is not on ZFS
