"""Reaching a test host with OpenSSH, independently of the product's SSH code."""

from __future__ import annotations

import subprocess

from apps.demo.fleet.model import Host

SHARED_FOR = 60  # seconds a shared connection stays open after its last command


def ssh_argv(host: Host, command: str) -> list[str]:
    """The ssh client's command line for `command` on host, trusting only its pinned key
    (and sharing one connection where the host has a control_path)."""
    shared = [] if not host.control_path else [
        "-o", "ControlMaster=auto", "-o", f"ControlPath={host.control_path}",
        "-o", f"ControlPersist={SHARED_FOR}"]
    return [
        "ssh", "-F", "/dev/null", "-i", host.private_key_path, "-p", str(host.port),
        "-o", f"UserKnownHostsFile={host.known_hosts_path}", "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
        "-o", "ConnectTimeout=10", *shared, f"{host.user}@{host.address}", command,
    ]  # fmt: skip


def close_shared(control_path: str) -> None:
    """Ask the shared connection at control_path (no % token left in it) to exit, if one
    is open: it goes by itself SHARED_FOR seconds after its last command otherwise. Never
    raises, so that stopping a host goes on whatever the connection does."""
    try:
        subprocess.run(["ssh", "-F", "/dev/null", "-o", f"ControlPath={control_path}",
                        "-O", "exit", "shared"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        pass


def ssh(host: Host, command: str, stdin: str = "", *, check: bool = True,
        timeout: float = 60) -> str:
    """Run command on host through the ssh client, trusting only its pinned key."""
    done = subprocess.run(ssh_argv(host, command), input=stdin, capture_output=True,
                          text=True, timeout=timeout, check=False)
    if check:
        assert done.returncode == 0, f"{command!r} on {host.name}: {done.stderr}"
    return done.stdout
