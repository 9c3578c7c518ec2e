"""The WAL operations' steps against a strict fake shell: enabling reads the settings
before writing, restarts, verifies; a failed restart writes the settings from before
back and restarts again before failing; disabling writes them back."""

import pytest

from apps.ops import remote_jobs
from apps.ops.engine import StepContext
from apps.ops.models import Operation
from apps.remote.detached import UnitStatus
from apps.wal import services
from apps.wal.core import commands
from apps.wal.core.plan import archive_command
from apps.wal.models import WalArchive
from tests.clones import factories
from tests.driving import drive
from tests.remote.fakeshell import FakeShell

pytestmark = [pytest.mark.django_db]

# pg_settings rows as apps.remote.alter_system reads them: name, setting, unit, vartype,
# source, sourcefile, pending_restart.
BEFORE = ("archive_command\t\t\tstring\tdefault\t\tf\n"
          "archive_mode\toff\t\tenum\tconfiguration file\t/etc/postgresql.conf\tf\n"
          "archive_timeout\t0\ts\tinteger\tdefault\t\tf\n")
DIRECTORY = "/tank/pozol_wal/pg:data"


@pytest.fixture
def cluster():
    row = factories.host()
    row.host_key_state = row.KeyState.PINNED
    row.save()
    return factories.cluster(row)


def scripted(monkeypatch, cluster, restart: str = "succeeded") -> tuple[FakeShell, list]:
    target = cluster.target()
    shell = FakeShell()
    shell.on(commands.read_settings(target), BEFORE)
    shell.on(commands.make_dataset("tank/pozol_wal/pg:data", "postgres", cluster.data_dir),
             DIRECTORY + "\n")
    values = {"archive_mode": "on", "archive_command": archive_command(DIRECTORY),
              "archive_timeout": "30"}
    shell.on(commands.write_settings(target, values))
    shell.on(commands.write_settings(target, {"archive_mode": None, "archive_command": None,
                                              "archive_timeout": None}))
    shell.on(commands.switch(target))
    restarts = []

    def advance(ctx, name, command):
        restarts.append(name)
        return UnitStatus(restart if name == "restart" else "succeeded", exit_code=0)

    monkeypatch.setattr(StepContext, "runner", lambda self: shell)
    monkeypatch.setattr(remote_jobs, "advance", advance)
    return shell, restarts


def test_enable_reads_first_restarts_and_verifies(monkeypatch, cluster):
    shell, restarts = scripted(monkeypatch, cluster)
    auto = "configuration file\t/d/postgresql.auto.conf\tf"
    after = (f"archive_command\t{archive_command(DIRECTORY)}\t\tstring\t{auto}\n"
             f"archive_mode\ton\t\tenum\t{auto}\n"
             "archive_timeout\t30\ts\tinteger\tconfiguration file\t/d/x\tf\n")
    reads = iter([BEFORE, after])
    original = shell.__call__

    def answer(command, **kwargs):
        if command.text == commands.read_settings(cluster.target()).text:
            shell.on(command, next(reads))
        return original(command, **kwargs)

    monkeypatch.setattr(StepContext, "runner", lambda self: answer)
    archive, operation = services.enable(cluster, 30)
    operation = drive(operation)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    assert archive.state == WalArchive.State.ON and archive.directory == DIRECTORY
    assert archive.before["archive_mode"] == {"value": "off", "from_auto_conf": False}
    assert restarts == ["restart"]
    assert shell.calls.index(commands.read_settings(cluster.target()).text) == 0


def test_a_failed_restart_gives_the_settings_back_before_failing(monkeypatch, cluster):
    shell, restarts = scripted(monkeypatch, cluster, restart="failed")
    archive, operation = services.enable(cluster, 30)
    operation = drive(operation)
    assert operation.status == Operation.Status.FAILED
    assert "the restart ended failed" in operation.error
    assert "settings from before were restored" in operation.error
    assert restarts == ["restart", "restore-restart"]
    reset = commands.write_settings(cluster.target(), {"archive_mode": None,
                                                       "archive_command": None,
                                                       "archive_timeout": None}).text
    assert shell.calls[-1] == reset
    archive.refresh_from_db()
    assert archive.state == WalArchive.State.FAILED and "restart" in archive.error
    # The operator may try again, or turn it off (the settings are known).
    assert services.plan_disable(archive).restart


def test_a_check_removes_what_no_snapshot_needs_records_the_window_and_a_gap(monkeypatch,
                                                                             cluster):
    from datetime import timedelta

    from django.utils import timezone

    from apps.alerts.models import Alert
    from apps.snapshots.core import commands as snapshot_commands
    from apps.snapshots.models import Snapshot
    from tests.snapshots import factories as snapshot_factories

    host = cluster.host
    taken = timezone.now() - timedelta(minutes=30)
    factories.snapshots(host, created_at=taken)
    stale = snapshot_factories.snapshot(
        host, "tank/pozol_wal/pg:data@pozol-pitr-gone", created_at=taken)
    archive = WalArchive.objects.create(cluster=cluster, dataset="tank/pozol_wal/pg:data",
                                        directory=DIRECTORY, state=WalArchive.State.ON)
    t = taken.timestamp()
    files = "\n".join(f"0000000100000000000000{n:02X} {t + (n - 3) * 60:.1f}"
                      for n in (1, 2, 3, 4, 6, 7))
    out = (f"== archiver\n000000010000000000000007\t{t + 240}\t0\t\t\t7\t"
           "000000010000000000000008\t0/8000060\t16777216\ton\n"
           f"== dataset\nused\t1000\navailable\t9\nmountpoint\t{DIRECTORY}\n"
           f"mounted\tyes\n== files\n{files}\n")
    shell = FakeShell()
    shell.on(commands.status(cluster.target(), archive.dataset), out)
    (remove,) = commands.remove(DIRECTORY, ["000000010000000000000001",
                                            "000000010000000000000002"])
    shell.on(remove)
    shell.on(snapshot_commands.destroy(stale.full_name))
    monkeypatch.setattr(StepContext, "runner", lambda self: shell)

    operation = drive(services.check(archive))
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    assert archive.removed == 2 and archive.segments == 4
    assert archive.gaps[0]["first"] == "000000010000000000000005"
    assert archive.window == [[pytest.approx(t + 1, abs=0.1), pytest.approx(t + 60, abs=0.1)]]
    # ^ from the snapshot to the gap
    assert archive.lag_segments == 0 and archive.space_used == 1000
    assert not Snapshot.objects.filter(pk=stale.pk).exists()
    alert = Alert.objects.get(host=host, kind="wal_archive", resolved_at=None)
    assert "000000010000000000000005" in alert.message


def test_an_archive_mounted_where_no_command_would_hold_fails_before_writing(monkeypatch,
                                                                            cluster):
    """The dataset came up mounted at a path PoZoL predicted shorter (changed on the
    host since discovery): the enable fails saying why, writes nothing, restarts
    nothing."""
    shell, restarts = scripted(monkeypatch, cluster)
    long = "/" + "m" * 300 + "/pozol_wal/pg:data"
    shell.on(commands.make_dataset("tank/pozol_wal/pg:data", "postgres", cluster.data_dir),
             long + "\n")
    archive, operation = services.enable(cluster, 30)
    operation = drive(operation)
    assert operation.status == Operation.Status.FAILED
    assert operation.error_code == "bad_directory" and "1023 bytes" in operation.error
    assert not any("ALTER SYSTEM" in call for call in shell.calls) and restarts == []
    archive.refresh_from_db()
    assert archive.state == WalArchive.State.FAILED and long in archive.error
