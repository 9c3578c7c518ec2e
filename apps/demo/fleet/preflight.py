"""Checks made before anything is created, so a failure leaves nothing behind."""

from __future__ import annotations

import errno
import os
import pwd
import shutil
import socket
from pathlib import Path

from .settings import PG_BIN_DIR, PG_OS_USER, FleetError

COMMANDS = ["zfs-fuse", "zpool", "zfs", "unshare", "nsenter", "setsid", "runuser", "ssh-keygen"]
COMMANDS += ["mount"]
SSHD = Path("/usr/sbin/sshd")  # sshd re-executes itself, so it wants an absolute path
PG_PROGRAMS = ["initdb", "pg_ctl", "psql", "createdb", "pgbench"]

# Mount points the zfs-fuse daemon hard-codes; each host covers them with a
# private tmpfs, but the empty directories must exist to be mounted over.
ZFS_MOUNT_POINTS = [
    Path(p) for p in ("/var/run/zfs", "/var/lock/zfs", "/var/lib/zfs", "/zfs-kstat")
]
SSHD_PRIVSEP_DIR = Path("/run/sshd")
# Where the product persists tuning (sysctls, ZFS module parameters). Each host
# gets a private copy bind-mounted over them. Never created on the machine: a
# host of a machine without one of them simply has none (see host.py).
PRIVATE_ETC_DIRS = [Path("/etc/sysctl.d"), Path("/etc/modprobe.d")]
# postgresql-common's configuration tree: a host in Debian's layout gets its own, bound
# over it, so the machine's clusters there are hidden from it (and it needs the mount
# point: installing postgresql-15 makes it).
ETC_POSTGRESQL = Path("/etc/postgresql")


def check_debian_layout() -> None:
    if not ETC_POSTGRESQL.is_dir():
        raise FleetError(f"{ETC_POSTGRESQL} is missing: a host in Debian's layout binds its "
                         "own over it (install postgresql-common)")


def check_machine() -> None:
    """Root, /dev/fuse, and every binary the hosts need."""
    if os.geteuid() != 0:
        raise FleetError("the fleet must run as root (it mounts, runs zfs-fuse and sshd)")
    if not Path("/dev/fuse").exists():
        raise FleetError("/dev/fuse is missing: zfs-fuse cannot mount anything")
    missing = [name for name in COMMANDS if shutil.which(name) is None]
    missing += [str(SSHD)] if not os.access(SSHD, os.X_OK) else []
    missing += [str(PG_BIN_DIR / n) for n in PG_PROGRAMS if not os.access(PG_BIN_DIR / n, os.X_OK)]
    if missing:
        raise FleetError(
            "missing binaries: "
            + ", ".join(missing)
            + " (apt-get install zfs-fuse openssh-server postgresql-15)"
        )
    try:
        pwd.getpwnam(PG_OS_USER)
    except KeyError:
        raise FleetError(f"OS user {PG_OS_USER!r} is missing (install postgresql-15)") from None


def check_free(address: str, port: int, what: str) -> None:
    """Fail if something already listens on address:port (or on the wildcard)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Like sshd and PostgreSQL themselves: connections of a previous fleet
        # lingering in TIME_WAIT do not count, a listener does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise FleetError(f"{address}:{port} ({what}) is already in use") from None
            raise FleetError(f"cannot bind {address}:{port} ({what}): {exc}") from None


def make_mount_points() -> None:
    for path in [*ZFS_MOUNT_POINTS, SSHD_PRIVSEP_DIR]:
        path.mkdir(parents=True, exist_ok=True)
