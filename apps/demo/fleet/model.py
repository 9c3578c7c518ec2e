"""What a host is (the connection facts the control plane needs) and where it lives on disk."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from .procs import Proc

# The order in which a host's processes start; down stops them in reverse.
PROCESSES = ("namespace", "zfs_fuse", "sshd", "postgres")


@dataclass
class Host:
    """Everything needed to reach one test host, as `up --json` prints it.

    The pg_* paths are inside the host's ZFS datasets, which are mounted only in
    the host's own mount namespace: reach them over ssh, not from the machine.

    The etc_* paths are the opposite: directories of the state dir, readable
    from the machine, that the host sees as its /etc/sysctl.d and
    /etc/modprobe.d (so a test reads what the product wrote there without
    ssh). None when the machine has no such directory: the host then has none
    either, and nothing is mounted there.
    """

    name: str
    address: str
    port: int
    user: str
    private_key_path: str
    known_hosts_path: str
    host_key_fingerprint: str
    host_public_key: str
    pools: list[str]
    pg_port: int
    pg_bin_dir: str
    pg_os_user: str
    pg_socket_dir: str
    pg_data_dir: str
    pg_wal_dir: str
    pg_data_dataset: str
    pg_wal_dataset: str
    pg_database: str
    pg_log_file: str
    work_dir: str
    # Defaults only so that a host.json written before they existed still loads (for down).
    etc_sysctl_dir: str | None = None
    etc_modprobe_dir: str | None = None
    authorized_keys_path: str | None = None
    pg_major: int = 15  # 15: the machine's PostgreSQL; another: npm's (pgbin.py)
    # Debian's packaged layout (debian=...): the cluster's configuration is
    # /etc/postgresql/<major>/main/ inside the host (pg_config_file), a bind mount of
    # etc_postgresql_dir/<major>/main of the state dir, readable from the machine.
    pg_config_file: str | None = None
    etc_postgresql_dir: str | None = None
    # The user PoZoL logs in as (`user` too): root, or an ordinary user with sudo whose
    # sudoers rules are the file etc_sudoers_file, the host's /etc/sudoers.d/pozol.
    login_user: str = "root"
    etc_sudoers_file: str | None = None
    # Where the ssh client keeps one connection to the host that later commands share
    # (OpenSSH's ControlPath, %C a hash of the host, port and user), for a host whose
    # connections are dear: a guest under software emulation takes about a second to
    # open one and 0.1 s to run a command on one already open. None: one per command.
    control_path: str | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class HostStatus(Host):
    """A host plus whether each process `up` started for it is still running."""

    alive: dict[str, bool] = field(default_factory=dict)

    @property
    def up(self) -> bool:
        return bool(self.alive) and all(self.alive.get(name) for name in PROCESSES)

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "up": self.up}


@dataclass(frozen=True)
class Layout:
    """Paths of one host inside the state dir."""

    root: Path

    @property
    def marker(self) -> str:
        """A string in the command line of every long-lived process of this host."""
        return f"{self.root}/"

    record = property(lambda self: self.root / "host.json")
    disk = property(lambda self: self.root / "disk.img")
    mnt = property(lambda self: self.root / "mnt")
    # Beside the host's directory, not in it: stop_host removes that directory,
    # and a host that serve rebuilds must answer with the key clients pinned.
    host_key = property(lambda self: self.root.parent / "host_keys" / f"{self.root.name}_ed25519")
    sshd_pid_file = property(lambda self: self.root / "sshd.pid")
    zfs_pid_file = property(lambda self: self.root / "zfs-fuse.pid")
    socket_dir = property(lambda self: self.root / "pgsocket")
    work_dir = property(lambda self: self.root / "pozol")
    pg_log = property(lambda self: self.root / "postgresql.log")
    # Copies of the machine's /etc/sysctl.d and /etc/modprobe.d, bind-mounted over them in the host.
    etc_dir = property(lambda self: self.root / "etc")
    # Debian's stock root .bashrc, bind-mounted over the machine's in the host.
    root_bashrc = property(lambda self: self.root / "etc" / "root.bashrc")

    def log(self, process: str) -> Path:
        return self.root / f"{process}.log"


@dataclass
class Record:
    """host.json: the host's facts and the processes started for it.

    Saved after every process starts, so a run killed halfway still leaves
    the PIDs that down needs.
    """

    host: Host
    procs: dict[str, Proc] = field(default_factory=dict)

    def save(self, layout: Layout) -> None:
        data = {
            "host": self.host.to_dict(),
            "procs": {name: proc.to_dict() for name, proc in self.procs.items()},
        }
        tmp = layout.record.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        os.replace(tmp, layout.record)

    @classmethod
    def load(cls, layout: Layout) -> Record | None:
        try:
            data = json.loads(layout.record.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        known = {f.name for f in fields(Host)}
        host = Host(**{k: v for k, v in data["host"].items() if k in known})
        procs = {name: Proc.from_dict(p) for name, p in data.get("procs", {}).items()}
        return cls(host=host, procs=procs)
