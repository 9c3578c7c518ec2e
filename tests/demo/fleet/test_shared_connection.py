"""A host with a control_path (the VM guests') is reached through one shared OpenSSH
connection, which close_shared ends; a host without one opens a connection per command.
Checked against a real test host's sshd: the sshd's own children are counted."""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
from pathlib import Path

import pytest

from apps.demo.fleet.client import close_shared, ssh

pytestmark = pytest.mark.fleet


def _open(control_path: str) -> bool:
    return subprocess.run(["ssh", "-F", "/dev/null", "-o", f"ControlPath={control_path}",
                           "-O", "check", "shared"], capture_output=True,
                          timeout=10).returncode == 0


def _connections(host, commands: int = 3) -> set[str]:
    """The sshd process of each command's connection: the shell's parent, which
    serves every session of one connection."""
    return {ssh(host, "echo $PPID").strip() for _ in range(commands)}


def test_a_host_with_a_control_path_shares_one_connection_until_closed(fleet_hosts):
    host = fleet_hosts[0]
    with tempfile.TemporaryDirectory(prefix="pozol-cm-") as directory:
        shared = dataclasses.replace(host, control_path=str(Path(directory) / "ssh-%C"))
        assert len(_connections(shared)) == 1
        sockets = list(Path(directory).glob("ssh-*"))
        assert len(sockets) == 1 and _open(str(sockets[0]))
        close_shared(str(sockets[0]))
        assert not _open(str(sockets[0]))
        close_shared(str(sockets[0]))  # nothing open any more: still quiet
    assert len(_connections(host)) == 3  # no control_path: a connection per command
