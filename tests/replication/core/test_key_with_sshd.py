"""The receive-only key line, installed in a real sshd's authorized_keys.

A private sshd on this test's loopback subnet (POZOL_TEST_FLEET_SUBNET) reads
the line PoZoL generates; a real ssh client logs in with the link's key. A
fake `zfs` (first on the session PATH via sshd's SetEnv) records its arguments
and the stream it was given, so this proves sshd's own parsing of
command="..." (with its \\" escapes), that the client's words arrive in
SSH_ORIGINAL_COMMAND, and that the stream reaches `zfs recv` intact.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.replication.core.commands import authorized_keys_line, recv_flags
from tests.replication.core.helpers import OZ, cluster

SSHD = Path("/usr/sbin/sshd")
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not SSHD.exists() or shutil.which("ssh") is None,
    reason="needs root, sshd and ssh")


def _free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[tuple[str, int, Path]]:
    address = os.environ.get("POZOL_TEST_FLEET_SUBNET", "127.0.98") + ".250"
    port = _free_port(address)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "host")],
                   check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "link")],
                   check=True)
    line = authorized_keys_line(cluster(), (tmp_path / "link.pub").read_text(), OZ)
    (tmp_path / "authorized_keys").write_text(line + "\n")
    fake = tmp_path / "bin" / "zfs"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/args\ncat > {tmp_path}/stream\n')
    fake.chmod(0o755)
    Path("/run/sshd").mkdir(exist_ok=True)
    options = {
        "ListenAddress": f"{address}:{port}", "HostKey": str(tmp_path / "host"),
        "PidFile": str(tmp_path / "sshd.pid"),
        "AuthorizedKeysFile": str(tmp_path / "authorized_keys"),
        "PermitRootLogin": "prohibit-password", "PasswordAuthentication": "no",
        "KbdInteractiveAuthentication": "no", "UsePAM": "no", "StrictModes": "no",
        "SetEnv": f"PATH={fake.parent}:/usr/bin:/bin",
    }
    argv = [str(SSHD), "-D", "-e", "-f", "/dev/null"]
    for key, value in options.items():
        argv += ["-o", f"{key}={value}"]
    server = subprocess.Popen(argv, stderr=(tmp_path / "sshd.log").open("w"))
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection((address, port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield address, port, tmp_path
    finally:
        server.terminate()
        server.wait(timeout=10)


def _ssh(sshd: tuple[str, int, Path], remote: str, stdin: bytes = b""):
    address, port, home = sshd
    argv = ["ssh", "-i", str(home / "link"), "-p", str(port), "-o", "BatchMode=yes",
            "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-l", "root", "--", address, remote]
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=30)


def test_the_key_receives_into_its_targets(sshd):
    done = _ssh(sshd, "pozol-recv backup/h1/main/wal", stdin=b"a zfs stream\x00\xff")
    home = sshd[2]
    assert done.returncode == 0, done.stderr
    assert (home / "args").read_text().splitlines() == [
        "recv", *recv_flags(OZ), "backup/h1/main/wal"]
    assert (home / "stream").read_bytes() == b"a zfs stream\x00\xff"


@pytest.mark.parametrize("remote", [
    "id", "zfs destroy -r backup", "pozol-recv backup/h1/main/wal; touch /tmp/pozol-pwned",
    "pozol-recv backup/h1/other", "pozol-recv -F backup/h1/main/wal",
])
def test_the_key_can_do_nothing_else(sshd, remote):
    done = _ssh(sshd, remote)
    assert done.returncode != 0
    assert b"pozol: refused" in done.stderr
    assert not (sshd[2] / "args").exists()
    assert not Path("/tmp/pozol-pwned").exists()
