"""Lightweight SSH hosts for the benchmarks that need many: each an OpenSSH server of
its own on its own loopback address (SUBNET.101, .102, ...) with its own host key,
logging in as this user to this machine. The real test hosts (zfs-fuse, sshd,
PostgreSQL each) are too heavy to run 20 of here; these run the product's real
scripts against this machine's /proc and whatever PostgreSQL discovery finds here,
with no ZFS (as tests/integration/test_plain_host.py's host). Every sshd is stopped
by the PID this module started."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"
FIRST_ADDRESS = 101  # beside the test fleet's .1, .2 on the same subnet


@dataclass(frozen=True)
class LightHost:
    name: str
    address: str
    port: int
    user: str
    key_path: Path
    known_hosts: Path
    host_key: str  # its public line



@contextlib.contextmanager
def light_hosts(work: Path, count: int, subnet: str) -> Iterator[list[LightHost]]:
    from apps.remote.keys import generate_keypair, public_line_of

    client_key = generate_keypair("pozol-bench-collector")[0]
    key_path = work / "id_ed25519"
    _write(key_path, client_key)
    authorized = work / "authorized_keys"
    _write(authorized, public_line_of(client_key) + "\n")
    user = _user()
    processes: list[subprocess.Popen] = []
    hosts = []
    try:
        for index in range(count):
            address = f"{subnet}.{FIRST_ADDRESS + index}"
            folder = work / f"h{index:02d}"
            folder.mkdir()
            host_private = generate_keypair(f"pozol-bench-host-{index}")[0]
            _write(folder / "host_key", host_private)
            host_key = public_line_of(host_private)
            known = folder / "known_hosts"
            known.write_text(f"{address} {host_key}\n")  # port 22: no [address]:port form
            processes.append(_start_sshd(folder, address, authorized))
            hosts.append(LightHost(f"light{index:02d}", address, 22, user, key_path, known,
                                   host_key))
        for host, process in zip(hosts, processes, strict=True):
            _wait_listening(host, process)
        yield hosts
    finally:
        from apps.remote import ssh

        ssh.close_all()
        for process in processes:  # by the PIDs this script started
            process.terminate()
        for process in processes:
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()


def _start_sshd(folder: Path, address: str, authorized: Path) -> subprocess.Popen:
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    options = {"ListenAddress": address, "Port": 22, "HostKey": folder / "host_key",
               "PidFile": folder / "sshd.pid", "UsePAM": "no",
               "AuthorizedKeysFile": authorized, "PermitRootLogin": "prohibit-password",
               "PasswordAuthentication": "no", "StrictModes": "no", "LogLevel": "ERROR",
               "MaxStartups": "100:30:200", "MaxSessions": 20}
    argv = [SSHD, "-D", "-e", "-f", "/dev/null"]
    for name, value in options.items():
        argv += ["-o", f"{name}={value}"]
    log = (folder / "sshd.log").open("ab")
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)


def _wait_listening(host: LightHost, process: subprocess.Popen) -> None:
    import socket

    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"sshd on {host.address} exited (is the address in use?)")
        with contextlib.suppress(OSError), socket.create_connection((host.address, 22), 0.2):
            return
        time.sleep(0.05)
    raise SystemExit(f"sshd on {host.address} did not listen within 15 s")


def registered(host: LightHost, discovered=None):
    """The first host added and discovered as an operator would; the others are the
    same machine behind another sshd, so they get its facts and their own pinned key
    (discovering each again on a machine shared with other suites' PostgreSQL test
    servers, which come and go, only adds failures to retry)."""
    from django.utils import timezone

    from apps.fleet import services as fleet
    from apps.fleet.models import Host
    from apps.ops.models import Operation
    from apps.remote.keys import fingerprint
    from tests.driving import drive

    if discovered is not None:
        copy = Host(name=host.name, address=host.address, port=host.port, user=host.user,
                    work_dir=discovered.work_dir, credential_kind=discovered.credential_kind,
                    host_key=host.host_key, host_key_fingerprint=fingerprint(host.host_key),
                    host_key_state=Host.KeyState.PINNED, reachable=True,
                    last_discovery_at=timezone.now(), facts=discovered.facts)
        copy.set_private_key(host.key_path.read_text())
        copy.save()
        return copy
    added, discovery = fleet.add_host(
        name=host.name, address=host.address, port=host.port, user=host.user,
        work_dir=str(host.key_path.parent / host.name), private_key=host.key_path.read_text(),
        expected_fingerprint=fingerprint(host.host_key))
    finished = drive(discovery)
    if finished.status != Operation.Status.SUCCEEDED:
        raise SystemExit(f"discovery of {host.name} failed: {finished.error}")
    added.refresh_from_db()
    return added



def _write(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o600)


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name
