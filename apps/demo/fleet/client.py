"""Reaching a test host with OpenSSH, independently of the product's SSH code."""

from __future__ import annotations

import subprocess

from apps.demo.fleet.model import Host


def ssh_argv(host: Host, command: str) -> list[str]:
    """The ssh client's command line for `command` on host, trusting only its pinned key."""
    return [
        "ssh", "-F", "/dev/null", "-i", host.private_key_path, "-p", str(host.port),
        "-o", f"UserKnownHostsFile={host.known_hosts_path}", "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
        "-o", "ConnectTimeout=10", f"{host.user}@{host.address}", command,
    ]  # fmt: skip


def ssh(host: Host, command: str, stdin: str = "", *, check: bool = True,
        timeout: float = 60) -> str:
    """Run command on host through the ssh client, trusting only its pinned key."""
    done = subprocess.run(ssh_argv(host, command), input=stdin, capture_output=True,
                          text=True, timeout=timeout, check=False)
    if check:
        assert done.returncode == 0, f"{command!r} on {host.name}: {done.stderr}"
    return done.stdout
