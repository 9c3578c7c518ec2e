"""apps.remote.detached through real SSH to a throwaway sshd (the setsid path).

The test hosts have no systemd, so the systemd-run launch is only checked for
the command it builds.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from apps.remote import detached, ssh
from apps.remote.commands import InvalidValue, cmd, script
from apps.remote.detached import UnitStatus
from apps.remote.shell import Result
from tests.remote.fakeshell import FakeShell
from tests.remote.sshd import Sshd, running_sshd
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with running_sshd(tmp_path_factory.mktemp("sshd")) as sshd:
        yield sshd


@pytest.fixture
def run(server: Sshd):
    yield ssh.session(server.target())
    ssh.close_all()


@pytest.fixture
def work_dir(tmp_path: Path) -> str:
    return str(tmp_path / "units")


def wait_for_end(run: ssh.Session, unit: str, work_dir: str, seconds: float = 15) -> UnitStatus:
    deadline = time.monotonic() + seconds
    while (status := detached.poll(run, unit, work_dir)).state == "running":
        assert time.monotonic() < deadline, f"{unit} still running after {seconds} s"
        time.sleep(0.2)
    return status


@pytest.mark.ssh
def test_unit_runs_detached_and_reports_its_exit_code(run: ssh.Session, work_dir: str):
    command = cmd("sh", "-c", "echo a; sleep 2; echo b; exit 3")

    assert detached.start(run, "bench-1", command, work_dir, use_systemd=False) is True
    running = detached.poll(run, "bench-1", work_dir)
    finished = wait_for_end(run, "bench-1", work_dir)

    assert running.state == "running" and running.exit_code is None
    assert running.started_at is not None
    assert (finished.state, finished.exit_code) == ("failed", 3)
    assert finished.started_at <= finished.finished_at


@pytest.mark.ssh
def test_output_is_readable_while_it_runs_by_offset(run: ssh.Session, work_dir: str):
    detached.start(run, "progress", script("echo a; sleep 2; echo b; echo oops >&2"), work_dir,
                   use_systemd=False)
    assert wait_until(lambda: detached.read_output(run, "progress", work_dir)[0], 5)

    first, offset = detached.read_output(run, "progress", work_dir)
    wait_for_end(run, "progress", work_dir)
    rest, end = detached.read_output(run, "progress", work_dir, offset)
    nothing_new = detached.read_output(run, "progress", work_dir, end)
    errors = detached.read_output(run, "progress", work_dir, stream="stderr")

    assert (first, offset) == ("a\n", 2)
    assert (rest, end) == ("b\n", 4)
    assert nothing_new == ("", 4)
    assert errors == ("oops\n", 5)


@pytest.mark.ssh
def test_output_offsets_count_bytes(run: ssh.Session, work_dir: str):
    detached.start(run, "utf8", cmd("printf", "%s", "ü🐘x"), work_dir, use_systemd=False)
    wait_for_end(run, "utf8", work_dir)

    assert detached.read_output(run, "utf8", work_dir) == ("ü🐘x", 7)
    assert detached.read_output(run, "utf8", work_dir, 6) == ("x", 7)


@pytest.mark.ssh
def test_starting_the_same_unit_twice_runs_it_once(
    run: ssh.Session, work_dir: str, tmp_path: Path
):
    counter = tmp_path / "runs"
    command = script("echo run >> {counter}; sleep 1", counter=str(counter))

    first = detached.start(run, "once", command, work_dir, use_systemd=False)
    again_while_running = detached.start(run, "once", command, work_dir, use_systemd=False)
    wait_for_end(run, "once", work_dir)
    again_after_finishing = detached.start(run, "once", command, work_dir, use_systemd=False)
    wait_for_end(run, "once", work_dir)

    assert (first, again_while_running, again_after_finishing) == (True, False, False)
    assert counter.read_text() == "run\n"


@pytest.mark.ssh
def test_unit_survives_the_ssh_connection_closing(run: ssh.Session, work_dir: str):
    detached.start(run, "survivor", script("sleep 2; echo done"), work_dir, use_systemd=False)
    ssh.close_all()

    assert detached.poll(run, "survivor", work_dir).state == "running"
    assert wait_for_end(run, "survivor", work_dir).state == "succeeded"
    assert detached.read_output(run, "survivor", work_dir)[0] == "done\n"


@pytest.mark.ssh
def test_stop_ends_the_whole_process_group(run: ssh.Session, work_dir: str):
    detached.start(run, "endless", script("sleep 31.25 & sleep 31.5; wait"), work_dir,
                   use_systemd=False)
    assert wait_until(lambda: "sleep 31.5" in run(cmd("ps", "-eo", "args")).stdout, 5)

    detached.stop(run, "endless", work_dir)

    assert detached.poll(run, "endless", work_dir).state == "failed"
    assert detached.poll(run, "endless", work_dir).exit_code == 143
    assert "sleep 31." not in run(cmd("ps", "-eo", "args")).stdout


@pytest.mark.ssh
def test_forget_removes_a_finished_unit_and_refuses_a_running_one(
    run: ssh.Session, work_dir: str
):
    detached.start(run, "short", cmd("true"), work_dir, use_systemd=False)
    detached.start(run, "long", cmd("sleep", "30"), work_dir, use_systemd=False)
    wait_for_end(run, "short", work_dir)

    detached.forget(run, "short", work_dir)
    with pytest.raises(detached.UnitStillRunning):
        detached.forget(run, "long", work_dir)
    detached.stop(run, "long", work_dir)
    detached.forget(run, "long", work_dir)

    assert detached.poll(run, "short", work_dir) == UnitStatus("missing")
    assert sorted(p.name for p in Path(work_dir).iterdir()) == []


@pytest.mark.ssh
def test_unknown_unit_is_missing(run: ssh.Session, work_dir: str):
    assert detached.poll(run, "never-started", work_dir) == UnitStatus("missing")
    assert detached.read_output(run, "never-started", work_dir) == ("", 0)


@pytest.mark.ssh
def test_a_unit_whose_wrapper_was_killed_is_failed_without_exit_code(
    run: ssh.Session, work_dir: str
):
    detached.start(run, "doomed", cmd("sleep", "30"), work_dir, use_systemd=False)
    pid_file = Path(work_dir) / "doomed.pid"
    assert wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 5)
    pid = pid_file.read_text().strip()
    run(script("kill -KILL -{pid}", pid=pid))  # as a reboot or the OOM killer would

    status = detached.poll(run, "doomed", work_dir)

    assert (status.state, status.exit_code) == ("failed", None)


@pytest.mark.ssh
def test_secrets_in_the_command_stay_redacted(run: ssh.Session, work_dir: str):
    seen: list[Result] = []
    token = ssh.command_observer.set(lambda host, result: seen.append(result))
    try:
        detached.start(run, "secret", cmd("echo", "s3cret-pw", secrets=("s3cret-pw",)),
                       work_dir, use_systemd=False)
    finally:
        ssh.command_observer.reset(token)

    assert "s3cret" not in seen[0].command
    assert wait_for_end(run, "secret", work_dir).state == "succeeded"


@pytest.mark.ssh
def test_the_log_shows_the_command_a_unit_runs_not_its_wrapper(run: ssh.Session, work_dir: str):
    seen: list[Result] = []
    token = ssh.command_observer.set(lambda host, result: seen.append(result))
    try:
        detached.start(run, "shown", cmd("echo", "hello"), work_dir, use_systemd=False)
        wait_for_end(run, "shown", work_dir)
    finally:
        ssh.command_observer.reset(token)

    assert seen[0].command == "detached shown: echo hello"
    assert seen[-1].command == "detached shown: poll"
    assert not any("setsid" in result.command for result in seen)


# --- Without a host: values and the systemd launch ---------------------------------


@pytest.mark.parametrize("unit", ["../etc", "-rf", "a b", "x;reboot", "", "a/b", "ü"])
def test_hostile_unit_names_never_reach_the_host(unit: str):
    with pytest.raises(InvalidValue):
        detached.start(FakeShell(), unit, cmd("true"), "/var/lib/pozol", use_systemd=False)


@pytest.mark.parametrize("work_dir", ["relative", "/tmp/../etc", "/tmp/a b", "/tmp/$(x)"])
def test_hostile_work_dirs_never_reach_the_host(work_dir: str):
    with pytest.raises(InvalidValue):
        detached.poll(FakeShell(), "unit", work_dir)


def test_with_systemd_the_wrapper_runs_as_a_transient_unit():
    shell = RecordingShell()

    detached.start(shell, "pgbench-7", cmd("pgbench", "-T", "60"), "/var/lib/pozol/units",
                   use_systemd=True)

    assert ("systemd-run --quiet --collect --unit=pozol-pgbench-7 -p WorkingDirectory="
            "/var/lib/pozol/units -p UMask=0077 -- sh pgbench-7.sh pgbench-7 <") in shell.calls[0]
    # systemd expands $VAR and turns $$ into $ in the command line it is given (252 always,
    # 254+ unless told not to): the wrapper's PID file read "$" and every unit looked
    # vanished on Debian 12 and 13. It is given two file names, nothing to expand.
    launch = shell.calls[0].split("systemd-run", 1)[1].split("||")[0]
    assert "$" not in launch
    assert "setsid" not in shell.calls[0]


class RecordingShell(FakeShell):
    """Answers 'started' to anything: for checking the text of a launch only."""

    def __call__(self, command, *, timeout=60.0, check=True, stdin=None) -> Result:
        self.calls.append(command.text)
        return Result(command.redacted(), 0, "started\n", "")


@pytest.mark.ssh
def test_follow_starts_once_waits_for_the_end_and_reads_the_last_stderr(
        run: ssh.Session, work_dir: str):
    command = script("echo working >&2; sleep 1; echo done >&2")
    started, status, err = detached.follow(run, "f1", command, work_dir, False, 0.2)
    assert started and status.state == "running" and "working" in err
    begun = time.monotonic()
    again, status, err = detached.follow(run, "f1", command, work_dir, False, 60)
    waited = time.monotonic() - begun
    assert not again  # the same unit, never a second start
    assert status.state == "succeeded" and status.exit_code == 0
    assert err.split() == ["working", "done"]
    assert waited < 30, "follow returns when the unit ends, not after its whole wait"


@pytest.mark.ssh
def test_follow_with_runs_first_before_the_start_and_after_once_it_ended_well(
        run: ssh.Session, work_dir: str):
    command = script("echo working >&2; sleep 0.5")
    found = detached.follow_with(run, "f2", command, work_dir, False, 60,
                                 first=script("echo held"), after=script("echo listed"))
    assert found.started and found.status.state == "succeeded"
    assert (found.first.strip(), found.first_code) == ("held", 0)
    assert (found.after.strip(), found.after_code) == ("listed", 0)
    assert found.err.split() == ["working"]


@pytest.mark.ssh
def test_follow_with_starts_nothing_when_first_fails(run: ssh.Session, work_dir: str):
    found = detached.follow_with(run, "f3", script("echo started > {f}", f=f"{work_dir}/ran"),
                                 work_dir, False, 60, first=script("echo refused; exit 3"),
                                 after=script("echo listed"))
    assert not found.started and found.status.state == "missing"
    assert (found.first.strip(), found.first_code) == ("refused", 3)
    assert found.after is None and found.after_code is None
    assert not Path(work_dir, "ran").exists()


@pytest.mark.ssh
def test_follow_with_does_not_run_after_when_the_unit_failed(run: ssh.Session, work_dir: str):
    found = detached.follow_with(run, "f4", script("exit 2"), work_dir, False, 60,
                                 after=script("echo listed"))
    assert (found.status.state, found.status.exit_code) == ("failed", 2)
    assert found.after is None and found.first is None
