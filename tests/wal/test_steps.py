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

BEFORE = ("archive_command\t\t\narchive_mode\toff\t/etc/postgresql.conf\n"
          "archive_timeout\t0\t\n")
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
    after = ("archive_command\t" + archive_command(DIRECTORY) + "\t/d/postgresql.auto.conf\n"
             "archive_mode\ton\t/d/postgresql.auto.conf\narchive_timeout\t30\t/d/x\n")
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
