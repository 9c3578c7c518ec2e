"""`python -m apps.demo.fleet serve`: one host whose sshd listens where asked, until SIGTERM.

What the demo-host container of docker-compose.yml runs, proved here without
Docker: the host is reached over real ssh at the --listen address (not the
host's own loopback address), which `status` reports too (register_demo_fleet
registers what status says), and SIGTERM takes it down but keeps the keys in
the state dir (a container's volume), so a second run answers with the same
host key and accepts the same client key. A second run over the state dir of
a killed one (as a restarted container finds its volume) comes up again, with
the same keys.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.demo.fleet import Host, status
from apps.demo.fleet.client import ssh
from apps.demo.fleet.model import Layout, Record
from apps.demo.fleet.procs import cmdline, identify
from tests.demo.fleet.conftest import fresh_state_dir

pytestmark = pytest.mark.fleet

# Neither the demo's 127.0.77 nor test_fleet.py's 127.0.79.
SUBNET = "127.0.94"
LISTEN = f"{SUBNET}.200"
REPO = Path(__file__).resolve().parents[3]
UP_TIMEOUT = 300


@pytest.fixture
def state_dir() -> Iterator[Path]:
    yield from fresh_state_dir("pozol-serve-")


class Serve:
    """`python -m apps.demo.fleet serve` as a subprocess, in a session of its own."""

    def __init__(self, state_dir: Path, tmp_path: Path) -> None:
        self.stderr_path = tmp_path / f"serve-{time.monotonic_ns()}.err"
        argv = [
            sys.executable, "-m", "apps.demo.fleet", "serve", "--listen", LISTEN,
            "--subnet", SUBNET, "--state-dir", str(state_dir),
        ]  # fmt: skip
        with self.stderr_path.open("wb") as stderr:
            self.proc = subprocess.Popen(
                argv, cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, start_new_session=True
            )

    def host(self) -> tuple[Host, list[str]]:
        """The host JSON serve prints, and the lines it prints after it."""
        try:
            lines = _read_lines(self.proc, UP_TIMEOUT, last="client private key: ")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nserve's stderr:\n{self.stderr()}") from None
        end = lines.index("]") + 1
        (data,) = json.loads("\n".join(lines[:end]))
        return Host(**data), lines[end:]

    def terminate(self, timeout: float = 30) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _read_lines(proc: subprocess.Popen[bytes], timeout: float, last: str) -> list[str]:
    """Lines of proc's stdout up to the first that starts with last."""
    assert proc.stdout is not None
    lines: list[str] = []
    buffer = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while not any(line.startswith(last) for line in lines):
            left = deadline - time.monotonic()
            assert left > 0, f"serve printed no host in {timeout}s: {lines}"
            if not selector.select(timeout=min(left, 1)):
                assert proc.poll() is None, f"serve exited with {proc.returncode}"
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, f"serve closed its stdout (exit {proc.poll()})"
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            lines += [line.decode() for line in complete]
    return lines


@pytest.fixture
def serve(state_dir: Path, tmp_path: Path) -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for run in started:
        run.close()




def _check_host(host: Host, after: list[str], tmp_path: Path) -> None:
    assert host.address == LISTEN
    assert host.port == 22
    assert f"host key fingerprint: {host.host_key_fingerprint}" in after
    assert f"client private key: {host.private_key_path}" in after
    datasets = ssh(host, "zfs list -H -o name").split()
    assert datasets == ["tank", "tank/pg", "tank/pg/data", "tank/pg/wal"]
    # The host's own PID namespace: a handful of processes, not the machine's.
    processes = ssh(host, "ps -e").splitlines()[1:]
    assert 3 < len(processes) < 40, processes


def _check_stopped_keeping_keys(run: Serve, state_dir: Path, host: Host) -> None:
    code = run.terminate(timeout=30)
    assert code == 0, run.stderr()
    assert not (state_dir / "host1").exists()
    assert Path(host.private_key_path).exists()
    assert (state_dir / "host_keys" / "host1_ed25519").exists()
    assert _pids_with(str(state_dir)) == []


def _check_same_keys(first: Host, second: Host) -> None:
    assert second.host_key_fingerprint == first.host_key_fingerprint
    assert second.private_key_path == first.private_key_path


def test_serve_listens_where_asked_and_stops_on_sigterm(
    state_dir: Path, serve: list[Serve], tmp_path: Path
) -> None:
    run = Serve(state_dir, tmp_path)
    serve.append(run)
    host, after = run.host()
    _check_host(host, after, tmp_path)
    # sshd listens on --listen only; PostgreSQL stays on the host's loopback address.
    record = Record.load(Layout(state_dir / "host1"))
    assert record is not None and record.host.address == f"{SUBNET}.1"
    assert f"{LISTEN} {host.host_public_key}" in Path(host.known_hosts_path).read_text()
    assert [s.address for s in status(state_dir)] == [LISTEN]
    client_key = Path(host.private_key_path).read_text()
    _check_stopped_keeping_keys(run, state_dir, host)

    again = Serve(state_dir, tmp_path)
    serve.append(again)
    second, after = again.host()
    _check_host(second, after, tmp_path)  # ssh with the kept client key and known_hosts
    _check_same_keys(host, second)
    assert Path(second.private_key_path).read_text() == client_key
    _check_stopped_keeping_keys(again, state_dir, second)


def test_serve_rebuilds_over_what_a_killed_run_left(
    state_dir: Path, serve: list[Serve], tmp_path: Path
) -> None:
    first = Serve(state_dir, tmp_path)
    serve.append(first)
    before, _ = first.host()
    # A killed container: serve gets no chance to run down, and every process
    # of the host dies with it (killing PID 1 of its namespace does that).
    record = Record.load(Layout(state_dir / "host1"))
    assert record is not None
    first.proc.kill()
    first.proc.wait()
    os.kill(record.procs["namespace"].pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(identify(p.pid) == p for p in record.procs.values()):
        assert time.monotonic() < deadline, "the host outlived its namespace"
        time.sleep(0.05)
    assert (state_dir / "host1" / "disk.img").exists()

    second = Serve(state_dir, tmp_path)
    serve.append(second)
    host, after = second.host()
    _check_host(host, after, tmp_path)
    _check_same_keys(before, host)
    _check_stopped_keeping_keys(second, state_dir, host)


def _pids_with(text: str) -> list[int]:
    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    return [pid for pid in pids if text in cmdline(pid)]
