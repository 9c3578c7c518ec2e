"""Where a fleet lives and how its hosts are named and addressed.

Everything a fleet creates sits under one state directory, so two fleets (the
demo's and a test run's) coexist as long as they use different state
directories and different loopback subnets.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_STATE_DIR = "/tmp/pozol-fleet"
DEFAULT_SUBNET = "127.0.77"
DEFAULT_SSH_PORT = 22

POOL = "tank"
POOL_SIZE = 1 << 30  # the pool file's size unless --pool-size / POZOL_FLEET_POOL_SIZE says
# zpool create refuses a smaller vdev ("less than the minimum size (64M)").
MIN_POOL_SIZE = 64 << 20
PG_BIN_DIR = Path("/usr/lib/postgresql/15/bin")
PG_PORT = 5432
PG_DATABASE = "pgbench"
PG_OS_USER = "postgres"
PG_DATA_DATASET = f"{POOL}/pg/data"
PG_WAL_DATASET = f"{POOL}/pg/wal"
SSH_USER = "root"

# The subnet must stay inside 127/8: every address there reaches lo without
# configuring anything, and nothing leaves the machine.
_SUBNET_RE = re.compile(r"^127\.(\d{1,3})\.(\d{1,3})$")
_SIZE_RE = re.compile(r"(?P<number>[0-9]+)(?P<suffix>[KMGT]?)", re.IGNORECASE)
_SUFFIX_SHIFT = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}


class FleetError(Exception):
    """A fleet operation failed; the message says what to do about it."""


@dataclass(frozen=True)
class FleetConfig:
    state_dir: Path
    subnet: str
    ssh_port: int
    # Where sshd listens instead of the host's own loopback address (serve:
    # one host reachable from other machines); None for the usual fleet.
    listen: str | None = None
    # Bytes of each new host's sparse pool file; None: not asked for (POOL_SIZE).
    pool_size: int | None = None

    def host_name(self, index: int) -> str:
        return f"host{index}"

    def address(self, index: int) -> str:
        return f"{self.subnet}.{index}"

    def ssh_listen(self, index: int) -> str:
        """The address sshd of host index binds (PostgreSQL stays on address(index))."""
        return self.listen or self.address(index)

    def ssh_dial(self, index: int) -> str:
        """An address on this machine that reaches sshd of host index."""
        if self.listen is None or ipaddress.IPv4Address(self.listen).is_unspecified:
            return self.address(index)
        return self.listen

    def host_dir(self, name: str) -> Path:
        return self.state_dir / name

    @property
    def client_key(self) -> Path:
        return self.state_dir / "id_ed25519"

    @property
    def authorized_keys(self) -> Path:
        return self.state_dir / "authorized_keys"

    @property
    def known_hosts(self) -> Path:
        return self.state_dir / "known_hosts"

    @property
    def advertised(self) -> Path:
        """Where clients dial each host, when not its loopback address (serve)."""
        return self.state_dir / "advertised.json"

    @property
    def marker(self) -> Path:
        """The file that proves a directory is a fleet's state dir (so down may delete it)."""
        return self.state_dir / "fleet.json"


def resolve_config(
    state_dir: str | os.PathLike[str] | None = None,
    subnet: str | None = None,
    ssh_port: int | None = None,
    listen: str | None = None,
    pool_size: int | str | None = None,
) -> FleetConfig:
    """Apply defaults and environment overrides, then validate."""
    state = state_dir or os.environ.get("POZOL_FLEET_STATE_DIR") or DEFAULT_STATE_DIR
    net = subnet or os.environ.get("POZOL_FLEET_SUBNET") or DEFAULT_SUBNET
    size = pool_size if pool_size is not None else os.environ.get("POZOL_FLEET_POOL_SIZE")
    port = ssh_port if ssh_port is not None else DEFAULT_SSH_PORT
    _check_subnet(net)
    if not 0 < port < 65536:
        raise FleetError(f"ssh port {port} is not a TCP port")
    if listen is not None:
        _check_listen(listen)
    # Absolute, so that paths recorded in host.json and in process command
    # lines mean the same thing from any working directory.
    return FleetConfig(state_dir=Path(state).absolute(), subnet=net, ssh_port=port, listen=listen,
                       pool_size=None if size in (None, "") else parse_pool_size(size))


def parse_pool_size(value: int | str) -> int:
    """Bytes from 1073741824, "4G", "512m" (1024-based K/M/G/T); FleetError otherwise."""
    text = str(value).strip()
    match = _SIZE_RE.fullmatch(text)
    if isinstance(value, bool) or not match:
        raise FleetError(f"pool size {value!r} must be bytes or a number with K, M, G or T "
                         "(such as 4G)")
    size = int(match["number"]) << _SUFFIX_SHIFT[match["suffix"].upper()]
    if size < MIN_POOL_SIZE:
        raise FleetError(f"pool size {value!r} is below zfs's minimum of 64M")
    return size


def _check_subnet(subnet: str) -> None:
    match = _SUBNET_RE.match(subnet)
    if not match or any(int(octet) > 255 for octet in match.groups()):
        raise FleetError(f"subnet {subnet!r} must look like 127.X.Y (a loopback /24)")


def _check_listen(listen: str) -> None:
    try:
        ipaddress.IPv4Address(listen)
    except ValueError:
        raise FleetError(f"--listen {listen!r} must be an IPv4 address such as 0.0.0.0") from None


def check_host_count(count: int, listen: str | None = None) -> None:
    if not 1 <= count <= 254:
        raise FleetError(f"--hosts must be between 1 and 254, not {count}")
    if listen is not None and count != 1:
        # Every host's sshd would want the same address and port.
        raise FleetError(f"a listen address serves one host, not {count}")
