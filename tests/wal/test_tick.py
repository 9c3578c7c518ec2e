"""The wal tick reads each archive that is on and due without an Operation, records what
it holds, and starts a `wal.check` Operation only when something must be removed."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.alerts.models import Alert
from apps.ops.models import Operation
from apps.remote.errors import Unreachable
from apps.wal import inspection, services
from apps.wal.core import commands
from apps.wal.models import WalArchive
from tests.clones import factories
from tests.remote.fakeshell import FakeShell

pytestmark = [pytest.mark.django_db]

DIRECTORY = "/tank/pozol_wal/pg:data"


@pytest.fixture
def archive():
    row = factories.host()
    row.host_key_state = row.KeyState.PINNED
    row.save()
    return WalArchive.objects.create(cluster=factories.cluster(row),
                                     dataset="tank/pozol_wal/pg:data", directory=DIRECTORY,
                                     state=WalArchive.State.ON)


def listing(taken: float, numbers: tuple[int, ...]) -> str:
    files = "\n".join(f"0000000100000000000000{n:02X} {taken + (n - 3) * 60:.1f}"
                      for n in numbers)
    return (f"== archiver\n000000010000000000000007\t{taken + 240}\t0\t\t\t7\t"
            "000000010000000000000008\t0/8000060\t16777216\ton\n"
            f"== dataset\nused\t1000\navailable\t9\nmountpoint\t{DIRECTORY}\n"
            f"mounted\tyes\n== files\n{files}\n")


def answering(monkeypatch, archive, out: str) -> FakeShell:
    shell = FakeShell()
    shell.on(commands.status(archive.cluster.target(), archive.dataset), out)
    monkeypatch.setattr(inspection.ssh, "session", lambda target, **kwargs: shell)
    return shell


def test_a_routine_read_records_the_window_and_the_gap_without_an_operation(
        monkeypatch, settings, archive):
    taken = timezone.now() - timedelta(minutes=30)
    factories.snapshots(archive.cluster.host, created_at=taken)
    # 3 is the first archived after the snapshot: nothing before it, nothing to remove.
    shell = answering(monkeypatch, archive, listing(taken.timestamp(), (3, 4, 6, 7)))
    assert services.tick() == []
    assert Operation.objects.count() == 0
    archive.refresh_from_db()
    assert archive.checked_at is not None and archive.segments == 4
    assert archive.gaps[0]["first"] == "000000010000000000000005"
    assert archive.window == [[pytest.approx(taken.timestamp() + 1, abs=0.1),
                               pytest.approx(taken.timestamp() + 60, abs=0.1)]]
    assert Alert.objects.filter(host=archive.cluster.host, kind="wal_archive",
                                resolved_at=None).exists()
    assert services.tick() == [] and len(shell.calls) == 1  # read a moment ago
    later = timezone.now() + timedelta(seconds=settings.POZOL["WAL_CHECK_INTERVAL"])
    assert services.tick(later) == [] and len(shell.calls) == 2
    WalArchive.objects.update(state=WalArchive.State.OFF)
    assert services.tick(later + timedelta(hours=1)) == [] and len(shell.calls) == 2


def test_what_must_be_removed_is_removed_by_one_operation(monkeypatch, archive):
    taken = timezone.now() - timedelta(minutes=30)
    factories.snapshots(archive.cluster.host, created_at=taken)
    shell = answering(monkeypatch, archive, listing(taken.timestamp(), (1, 2, 3, 4)))
    (operation,) = services.tick()
    assert operation.kind == "wal.check"
    assert operation.trigger == Operation.Trigger.SCHEDULE
    archive.refresh_from_db()
    assert archive.checked_at is None  # the operation records, once it removed them
    assert services.tick() == [] and len(shell.calls) == 1  # its check is still active


def test_a_failed_read_keeps_the_last_record(monkeypatch, archive):
    def unreachable(target, **kwargs):
        def run(command, **kwargs):
            raise Unreachable("db1: no answer")
        return run

    monkeypatch.setattr(inspection.ssh, "session", unreachable)
    assert services.tick() == []
    archive.refresh_from_db()
    assert archive.checked_at is None and Operation.objects.count() == 0
    assert "failed: db1: no answer; what is shown is from no read yet" in archive.read_error
    assert not Alert.objects.filter(kind="wal_archive", resolved_at=None).exists()


def test_a_good_read_after_a_failed_one_clears_it(monkeypatch, archive):
    WalArchive.objects.filter(pk=archive.pk).update(read_error="the read at ... failed")
    taken = timezone.now() - timedelta(minutes=30)
    factories.snapshots(archive.cluster.host, created_at=taken)
    answering(monkeypatch, archive, listing(taken.timestamp(), (3, 4)))
    assert services.tick() == []
    archive.refresh_from_db()
    assert archive.read_error == "" and archive.segments == 2


def test_an_unpinned_host_or_a_stopped_cluster_is_not_read(monkeypatch):
    row = factories.host()
    row.host_key_state = row.KeyState.CHANGED
    row.save()
    WalArchive.objects.create(cluster=factories.cluster(row), dataset="t/a",
                              state=WalArchive.State.ON)
    monkeypatch.setattr(inspection.ssh, "session", lambda target, **kwargs: FakeShell())
    assert services.tick() == []


def test_a_full_archive_is_alerted_as_full(monkeypatch, archive):
    """Output of the status script on a zfs-fuse test host (PostgreSQL 15) whose archive
    an operator's quota left no room (tests/integration/test_wal_faults.py writes it
    with POZOL_WAL_CAPTURE set): the copy of 05 failed, half of it is in a .tmp."""
    from tests.wal.core.test_commands import captured

    out = captured("status-quota-full-zfs-fuse-pg15.txt")
    status = commands.parse_status(out)
    assert status.available == 0 and status.archiver.failed_count == 6
    assert [a.segment.number for a in status.archived] == [4]  # not the partial .tmp
    answering(monkeypatch, archive, out)
    assert services.tick() == []
    archive.refresh_from_db()
    assert archive.space_available == 0 and archive.last_failed_wal.endswith("05")
    alert = Alert.objects.get(host=archive.cluster.host, kind="wal_archive", resolved_at=None)
    assert ("000000010000000000000005 could not be archived (6 failed attempts): no space, "
            "tank/pozol_wal/pg:data has 0 B available, less than one 16.0 MiB segment"
            ) in alert.message

    # Room again, as the next read finds it: the failure alone is said, without a cause.
    roomy = out.replace("available\t0", f"available\t{64 * 2**20}")
    answering(monkeypatch, archive, roomy)
    services.tick(timezone.now() + timedelta(hours=1))
    still = Alert.objects.get(host=archive.cluster.host, kind="wal_archive", resolved_at=None)
    assert "05 could not be archived" in still.message and "no space" not in still.message
