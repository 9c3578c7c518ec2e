"""A throwaway real OpenSSH server for the SSH and detached-command tests.

It runs /usr/sbin/sshd in the foreground on 127.0.98.1 with a fresh host key,
an authorized_keys file holding a fresh client key, and no system config, and
is stopped by the PID it was started with. Tests log in as the current user
(root in the test containers), so commands really run on this machine.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from apps.remote.keys import generate_keypair, public_line_of
from apps.remote.ssh import Target

SSHD = "/usr/sbin/sshd"
ADDRESS = "127.0.98.1"


@dataclass(frozen=True)
class Sshd:
    address: str
    port: int
    user: str
    client_key: str  # private, OpenSSH form
    host_key: str  # public line the server presents
    workdir: Path

    def target(self, **changes: object) -> Target:
        values: dict[str, object] = {
            "name": "testhost", "address": self.address, "port": self.port, "user": self.user,
            "private_key": self.client_key, "host_key": self.host_key,
        }
        values.update(changes)
        return Target(**values)  # type: ignore[arg-type]


def require_sshd() -> None:
    if not os.path.exists(SSHD):
        pytest.skip(f"{SSHD} is not installed")
    if os.geteuid() != 0:
        pytest.skip("a throwaway sshd needs root (privilege separation, root login)")


def free_port(address: str = ADDRESS) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_sshd(workdir: Path, *, port: int | None = None, client_key: str | None = None,
                 host_private_key: str | None = None,
                 login_env: str | None = None) -> Iterator[Sshd]:
    """Start sshd in `workdir`; reuse `port`/`client_key` to 'reinstall' a host.
    `login_env`: sshd_config's SetEnv, what a login gets (a host's locale, say)."""
    require_sshd()
    workdir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    client_key = client_key or generate_keypair("pozol-test-client")[0]
    host_private = host_private_key or generate_keypair("pozol-test-host")[0]
    host_public = public_line_of(host_private)
    _write(workdir / "host_key", host_private)
    _write(workdir / "authorized_keys", public_line_of(client_key) + "\n")
    process = _start(workdir, port, login_env)
    try:
        _wait_listening(process, port, workdir)
        yield Sshd(ADDRESS, port, _user(), client_key, host_public, workdir)
    finally:
        _stop(process)


def _start(workdir: Path, port: int, login_env: str | None) -> subprocess.Popen[bytes]:
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # privilege separation dir
    options = {
        "ListenAddress": ADDRESS, "Port": port, "HostKey": workdir / "host_key",
        "PidFile": workdir / "sshd.pid", "UsePAM": "no",
        "AuthorizedKeysFile": workdir / "authorized_keys",
        "PermitRootLogin": "prohibit-password", "PasswordAuthentication": "no",
        # tmp dirs hang off world-writable /tmp, which StrictModes refuses
        "StrictModes": "no", "LogLevel": "ERROR",
    }
    if login_env:
        options["SetEnv"] = login_env
    argv = [SSHD, "-D", "-e", "-f", "/dev/null"]
    for name, value in options.items():
        argv += ["-o", f"{name}={value}"]
    log = (workdir / "sshd.log").open("ab")
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)


def _wait_listening(process: subprocess.Popen[bytes], port: int, workdir: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited: {(workdir / 'sshd.log').read_text()}")
        with contextlib.suppress(OSError), socket.create_connection((ADDRESS, port), 0.2):
            return
        time.sleep(0.05)
    _stop(process)
    raise RuntimeError("sshd did not start listening within 10 s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    # Only the listener we started; sessions it forked end with their connections.
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o600)


def _user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name
