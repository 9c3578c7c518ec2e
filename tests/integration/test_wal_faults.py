"""WAL archiving when the archive command fails on the host (issue 23's faults), on a
real test host: the archive's directory made unwritable for PostgreSQL's user. The failure is
alerted with the segment it concerns, PostgreSQL keeps that segment and retries, and
once the archive is writable again the segment is archived: nothing is lost, no gap,
the alert resolves. Checked with plain psql, zfs and ls over OpenSSH."""

from __future__ import annotations

import pytest

from apps.alerts.models import Alert
from apps.ops.models import Operation
from apps.wal import alerting, services
from apps.wal.models import WalArchive
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_snapshots import psql
from tests.integration.test_wal import archived, host  # noqa: F401 (the fixture)
from tests.waiting import wait_for

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def failed_count(fleet_host) -> int:
    return int(psql(fleet_host, "SELECT failed_count FROM pg_stat_archiver"))


def test_a_failing_archive_command_is_alerted_and_loses_no_wal(host):  # noqa: F811
    fleet_host, row = host
    cluster = row.clusters.get()
    archive, operation = services.enable(cluster, 10)
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    run_on(fleet_host, f"chmod 500 {archive.directory}")  # cp: Permission denied
    try:
        psql(fleet_host, "INSERT INTO pozol_wal_rows (id) SELECT generate_series(1, 100)")
        stuck = psql(fleet_host, "SELECT pg_walfile_name(pg_switch_wal())")
        wait_for(lambda: failed_count(fleet_host) > 0, 60, "the archive command to fail")
        assert stuck not in archived(fleet_host, archive.directory)
        # PostgreSQL keeps the segment, marked ready to archive, and retries it.
        wal_dir = f"{fleet_host.pg_data_dir}/pg_wal"
        kept = run_on(fleet_host, f"ls {wal_dir} {wal_dir}/archive_status")
        assert stuck in kept and f"{stuck}.ready" in kept

        checked = drive(services.check(archive))
        assert checked.status == Operation.Status.SUCCEEDED, checked.error
        archive.refresh_from_db()
        assert archive.state == WalArchive.State.ON
        assert archive.failed_count > 0 and archive.last_failed_wal == stuck
        alert = Alert.objects.get(host=row, kind=alerting.KIND, resolved_at=None)
        assert f"{stuck} could not be archived" in alert.message
        print(f"\nalert while failing: {alert.message}")
    finally:
        run_on(fleet_host, f"chmod 700 {archive.directory}")

    # Writable again: PostgreSQL's retry archives the very segment; no gap, resolved.
    wait_for(lambda: stuck in archived(fleet_host, archive.directory), 120,
             "the retried segment to be archived")
    psql(fleet_host, "SELECT pg_switch_wal()")
    drive(services.check(archive))
    archive.refresh_from_db()
    assert not archive.gaps and archive.last_archived_wal >= stuck
    assert not Alert.objects.filter(host=row, kind=alerting.KIND, resolved_at=None).exists()
