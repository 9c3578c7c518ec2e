"""Why the archiver fails, as PoZoL's archive command noted it (issue 23): the routine
read keeps the reason on the archive, the `wal_archive` alert and the host's WAL tab
name it (escaped: it is host text), the API shows it, and a read that finds archiving
succeeding again clears it. On output captured from zfs-fuse test hosts
(tests/integration/test_wal_faults.py, POZOL_WAL_CAPTURE)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.alerts.models import Alert
from apps.wal import services
from apps.wal.models import WalArchive
from tests.wal.core.test_commands import READ_ONLY, STUCK, captured
from tests.wal.test_tick import answering
from tests.wal.test_tick import archive as archive  # noqa: F401 (fixture)

pytestmark = [pytest.mark.django_db]


def open_alert(archive: WalArchive) -> Alert:
    return Alert.objects.get(host=archive.cluster.host, kind="wal_archive", resolved_at=None)


def test_a_read_only_archive_is_alerted_with_the_reason_and_shown(  # noqa: F811
        monkeypatch, archive, api, client, operator):
    answering(monkeypatch, archive, captured(READ_ONLY))
    assert services.tick() == []
    archive.refresh_from_db()
    assert archive.failure_reason.endswith(".tmp': Read-only file system")
    assert archive.failure_reason_wal == STUCK
    assert archive.failure_reason_at.timestamp() == 1795939476
    message = open_alert(archive).message
    assert (f"{STUCK} could not be archived (2 failed attempts): the archive dataset is "
            "read-only (zfs get readonly tank/pozol_wal/pg:data) (the archive command said "
            "at 2026-11-29 08:04:36 UTC: cp: cannot create regular file '") in message
    assert "no space" not in message  # 902 MiB available: not full

    shown = api.get(f"/api/wal-archives/{archive.pk}/").json()
    assert shown["failure_reason"] == archive.failure_reason
    assert shown["failure_reason_wal"] == STUCK
    assert shown["failure_reason_at"].startswith("2026-11-29T08:04:36")
    client.force_login(operator)
    page = client.get(f"/hosts/{archive.cluster.host_id}/wal/").content.decode()
    assert "the archive dataset is read-only" in page
    assert "regular file &#x27;/tmp/pozol-test-fleet-" in page

    # Archived since (the same read a moment later, its last success after the note): the
    # reason goes, and with no failure newer than a success the alert resolves.
    row = captured(READ_ONLY).split("\n")[1].split("\t")
    later = captured(READ_ONLY).replace(f"\t{row[1]}\t", "\t1795939500.5\t", 1)
    answering(monkeypatch, archive, later)
    assert services.tick(timezone.now() + timedelta(hours=1)) == []
    archive.refresh_from_db()
    assert archive.failure_reason == "" and archive.failure_reason_at is None
    assert not Alert.objects.filter(kind="wal_archive", resolved_at=None).exists()


def test_a_reason_is_host_text_and_the_page_escapes_it(archive, client, operator):  # noqa: F811
    WalArchive.objects.filter(pk=archive.pk).update(
        checked_at=timezone.now(), failed_count=1, last_failed_wal=STUCK,
        last_failed_at=timezone.now(), failure_reason="<script>alert(1)</script> denied",
        failure_reason_wal=STUCK)
    client.force_login(operator)
    page = client.get(f"/hosts/{archive.cluster.host_id}/wal/").content.decode()
    assert "<script>alert(1)" not in page
    assert "the archive command said: &lt;script&gt;alert(1)&lt;/script&gt; denied" in page


def test_a_full_archive_keeps_the_no_space_hint_beside_the_reason(  # noqa: F811
        monkeypatch, archive):
    """An operator's quota filled the archive: the command's own reason (Disk quota
    exceeded) and the read's hint from `available` are both said."""
    answering(monkeypatch, archive, captured("status-quota-full-noted-zfs-fuse-pg15.txt"))
    assert services.tick() == []
    message = open_alert(archive).message
    assert ("000000010000000000000008 could not be archived (2 failed attempts): no space "
            "left in the archive (its quota) (the archive command said at 2026-11-29 "
            "08:06:13 UTC: cp: error copying 'pg_wal/000000010000000000000008' to ") in message
    assert message.endswith(".tmp': Disk quota exceeded); no space, tank/pozol_wal/pg:data "
                            "has 0 B available, less than one 16.0 MiB segment (raise its "
                            "quota, or free its pool; PostgreSQL keeps the segments in pg_wal "
                            "and retries)")
