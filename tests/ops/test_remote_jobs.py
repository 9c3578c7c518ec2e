"""What the log says when a step starts long work detached: the command, not the wrapper."""

from __future__ import annotations

import pytest

from apps.ops import engine, remote_jobs
from apps.remote.commands import cmd
from apps.remote.errors import CommandFailed
from apps.remote.shell import Result

pytestmark = pytest.mark.django_db

SECRET = "s3cret-pw"


class Host:
    """Answers the start script like a host would (`started`, or `exists` the second
    time), and every poll with a running unit."""

    def __init__(self, *, broken: bool = False) -> None:
        self.broken = broken
        self.units: set[str] = set()

    def __call__(self, command, *, timeout=60.0, check=True, stdin=None) -> Result:
        if "set -C" in command.text:  # the start script claims the unit's pid file
            if self.broken:
                return Result(command.redacted(), 1, "", "mkdir: No space left").check()
            answer = "exists" if command.text in self.units else "started"
            self.units.add(command.text)
            return Result(command.redacted(), 0, answer + "\n", "")
        return Result(command.redacted(), 0, "running - 1700000000 -\n", "")


@pytest.fixture
def context(replayed_host, delivered):
    return engine.StepContext(engine.start("fleet.discover", host=replayed_host))


def lines(context) -> list[tuple[str, str]]:
    return [(line.level, line.text) for line in context.operation.log_lines.all()]


def test_a_start_is_one_line_with_the_command_and_its_unit(context, monkeypatch):
    host = Host()
    monkeypatch.setattr(context, "runner", lambda: host)
    command = cmd("pgbench", "-i", "--password", SECRET, secrets=(SECRET,))

    assert remote_jobs.advance(context, "init", command).state == "running"
    assert remote_jobs.advance(context, "init", command).state == "running"  # step re-run

    unit = f"op{context.operation.pk}-init"
    assert lines(context) == [("command", f"$ pgbench -i --password ***  -> started on db1 "
                                          f"as detached unit {unit}")]


def test_a_start_that_fails_is_logged_before_the_error(context, monkeypatch):
    monkeypatch.setattr(context, "runner", lambda: Host(broken=True))
    with pytest.raises(CommandFailed):
        remote_jobs.advance(context, "init", cmd("pgbench", "-i"))
    unit = f"op{context.operation.pk}-init"
    assert lines(context) == [("warning", f"$ pgbench -i  -> could not be started as detached "
                                          f"unit {unit}")]
