"""Where a clone lives and what it must not share with its origin: pure decisions.

A clone of a PostgreSQL cluster is two ZFS clones (data and WAL, from one
snapshot name) under `<pool>/pozol_clones/<name>/`, started as a second
PostgreSQL on a port of its own. What a copy must not share with its origin
(issue 10; Database Lab Engine does the same): its port and sockets, archiving
(archive_command would ship the clone's WAL into the origin's archive),
replication (primary_conninfo, slots, standby/recovery signal files), the
origin's `postmaster.pid`, and the origin's memory settings: a clone gets the
"Clone / development" profile's small ones, so many fit on one host.

Settings go at the end of `postgresql.auto.conf`, which PostgreSQL reads last,
so they win over whatever postgresql.conf says without editing it. pg_hba.conf
is replaced: the owner over the clone's own socket (PoZoL's way in), the clone's
role by password from the addresses the operator allows, nothing else.

A cluster whose configuration lives outside its data directory (Debian's
/etc/postgresql/<major>/<name>/, issue 21) has its configuration carried into the
clone, never shared: the creation script copies the origin's postgresql.conf, its
conf.d/ and its pg_ident.conf into the clone's data directory (reading the origin's
files only), writes the clone's own pg_hba.conf beside them, and ends the copied
postgresql.conf with data_directory, hba_file and ident_file naming the clone's
files. The clone starts from its own data directory as a plain `pg_ctl -D`, so no
unit or pg_ctlcluster knows of it and systemd never fights it. What the copied file
still names of the origin's is overridden in postgresql.auto.conf: the pid file
Debian writes to /var/run/postgresql (`external_pid_file`, emptied for every clone),
the cluster's name, and ssl, turned off, since the origin's key is its owner's alone
(the clone's uid cannot read it, and copying production's private key into a
tenant's copy would hand it out). A drill on a replication target, where the
origin's files are not, gets an empty postgresql.conf: its postgresql.auto.conf
and PoZoL's settings are all a drill needs.

Confinement (issue 19): a clone runs beside production on the same host, so its
PostgreSQL runs as an OS user of its own (`os_uid`, one per clone: the host's
clone uid base plus the clone's port, which is unique on the host), never as the
origin's owner. That user owns the clone's datasets and its socket directory and
nothing else, has no passwd entry (PostgreSQL needs none; the script refuses a
uid that has one, or that a process or another clone's directory uses), and
cannot enter the origin's data directory (0700, its owner's): even the clone's
own superuser (COPY ... PROGRAM, pg_read_file) reads and writes only the clone.
PoZoL gets in by `trust` for the owner role over the clone's socket only: that
directory is 0700 and the clone's user's, so only root and that user reach the
socket, and that user owns the data directory (pg_hba.conf, pg_authid) already,
so trust gives it nothing it has not; peer cannot serve, as the owner's OS user
cannot enter the directory and the clone's user has no name. A layout without
`os_uid` (a clone made before confinement) keeps running as the owner, by peer.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import asdict, dataclass

from apps.remote.commands import (
    InvalidValue,
    abs_path,
    dataset_name,
    integer,
    pg_identifier,
    pool_of,
    snapshot_label,
)

CLONES_PARENT = "pozol_clones"
# A clone's OS user and group are UID_BASE + its port (1024-65535). The default range,
# 1,900,001,024-1,900,065,535, is above systemd's container range (524288-1879048191)
# and below its foreign range (2147352576-): no distribution hands these out. An
# operator whose hosts use it otherwise sets another base per host (CloneHostSettings).
UID_BASE = 1_900_000_000
UID_BASE_MIN = 65_536  # above every 16-bit uid (system, regular, nobody)
UID_BASE_MAX = 2**31 - 1 - 65_535  # the clone's uid stays a positive 32-bit signed int
NAME_MAX = 40
_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")

# The "Clone / development" profile (apps/tuning/core/profiles.py CLONE_DEV), at the floor
# of its formulas: shared_buffers max(128MB, ...) is 128MB, so a host fits many clones.
CLONE_SETTINGS = {
    "shared_buffers": "128MB",
    "work_mem": "4MB",
    "maintenance_work_mem": "64MB",
    "effective_cache_size": "512MB",
    "synchronous_commit": "off",
    "max_connections": "20",
    "archive_mode": "off",
    "archive_command": "",
    "primary_conninfo": "",
    "primary_slot_name": "",
    "hot_standby": "off",
    "wal_level": "replica",
    "max_wal_senders": "0",
    "max_replication_slots": "0",
    "logging_collector": "off",
    # The origin's pid file (Debian: /var/run/postgresql/<major>-<name>.pid) is its own.
    "external_pid_file": "",
}


# What one clone takes at the most: its shared buffers and every connection's work_mem.
CLONE_MEMORY = (128 + 20 * 4) * 2**20
# What a new clone may write at once, checked against its pool's reserve before it is
# made: a clone of a busy cluster replays its WAL on start (issue 19: 153 MiB at once).
# A clone's own quota caps this (and everything it writes later).
CLONE_FIRST_WRITES = 256 * 2**20
MIN_CLONE_QUOTA = 64 * 2**20  # room to start: a WAL segment, recovery, its server log
DEFAULT_CLONE_QUOTA = 8 * 2**30


class CloneError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def clone_name(value: object) -> str:
    if not isinstance(value, str) or not _NAME.match(value) or len(value) > NAME_MAX:
        raise CloneError("name", f"A clone name is 1-{NAME_MAX} characters of a-z 0-9 - "
                                 f"starting with a letter, not {value!r}.")
    return value


def clone_uid(base: int, port: int) -> int:
    """The OS uid (and gid) a clone on `port` runs as: unique on the host, as ports are."""
    return base + port


@dataclass(frozen=True)
class Origin:
    """The cluster a clone is made from, as discovery found it."""

    data_dataset: str
    data_mountpoint: str
    data_dir: str
    wal_dataset: str | None = None  # None: the WAL is inside the data directory
    wal_mountpoint: str | None = None
    wal_dir: str | None = None
    owner: str = "postgres"
    bin_dir: str = "/usr/lib/postgresql/15/bin"
    server_version_num: int | None = None  # None: not known (settings of 14+ left out)
    # The configuration lives outside the data directory (Debian's layout): the clone gets
    # its own postgresql.conf (a copy of config_file, or empty where that file is not on
    # the clone's host) and pg_ident.conf (a copy of ident_file, or empty).
    external_config: bool = False
    config_file: str | None = None
    ident_file: str | None = None

    @property
    def pools(self) -> list[str]:
        """The pools the clone's first writes land on: the data dataset's and the WAL's."""
        pools = [pool_of(self.data_dataset)]
        if self.wal_dataset:
            pools.append(pool_of(self.wal_dataset))
        return pools

    def __post_init__(self) -> None:
        dataset_name(self.data_dataset)
        for path in (self.data_mountpoint, self.data_dir, self.bin_dir):
            abs_path(path)
        for path in (self.config_file, self.ident_file):
            if path is not None:
                abs_path(path)
        if not _below(self.data_dir, self.data_mountpoint):
            raise CloneError("cluster", f"{self.data_dir} is not on {self.data_dataset}")
        if self.wal_dataset is not None:
            dataset_name(self.wal_dataset)
            if not (self.wal_mountpoint and self.wal_dir
                    and _below(self.wal_dir, self.wal_mountpoint)):
                raise CloneError("cluster", f"its WAL ({self.wal_dir}) is not on "
                                            f"{self.wal_dataset}")


# A replay with no target: every transaction the archive holds (a clone on a link's
# target reset to the newest moment there).
LATEST = "latest"
# recovery_target_time as PoZoL writes it (datetime.isoformat() with its offset), and
# recovery_target_lsn as PostgreSQL prints one: nothing else reaches the settings.
_TARGET_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?[+-]\d\d:\d\d\Z")
_TARGET_LSN = re.compile(r"[0-9A-F]{1,8}/[0-9A-F]{1,8}\Z")
_TARGET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}\Z")  # apps.wal's restore points


@dataclass(frozen=True)
class Recovery:
    """A point-in-time clone (issue 23): the snapshot is replayed forward with the WAL of
    the origin's archive (apps.wal) to `value`, then promoted. The archive is not read in
    place: a ZFS clone of its snapshot `label`, made under the clone's root and given to
    the clone's own uid (which cannot enter the origin's archive), lives only while the
    clone replays."""

    archive: str  # the origin's archive dataset
    label: str  # the archive's snapshot for this clone (after '@')
    target: str  # "time", "lsn" or "name" (a restore point), or "latest" (all it holds)
    value: str
    # On a replication target: `archive` is the received copy and `label` a snapshot a
    # link sent, which the replay clones as it is and never takes nor destroys (a
    # snapshot made there would make the copy diverge from its source).
    received: bool = False

    def __post_init__(self) -> None:
        try:
            dataset_name(self.archive)
            snapshot_label(self.label)
        except InvalidValue as exc:
            raise CloneError("at", str(exc)) from None
        pattern = {"time": _TARGET_TIME, "lsn": _TARGET_LSN, "name": _TARGET_NAME,
                   LATEST: re.compile(LATEST + r"\Z")}.get(self.target)
        if pattern is None or not pattern.match(self.value):
            raise CloneError({"lsn": "lsn", "name": "restore_point"}.get(self.target, "at"),
                             f"Not a recovery target PoZoL writes: {self.value!r}.")

    def settings(self) -> dict[str, str]:
        """What goes beside the clone's settings (restore_command is written by the
        creation script, which knows the archive clone's mountpoint)."""
        if self.target == LATEST:
            # No target: the replay runs to the end of the archive, then promotes.
            return {"recovery_target_timeline": "current"}
        return {f"recovery_target_{self.target}": self.value,
                "recovery_target_action": "promote", "recovery_target_timeline": "current"}

    def describe(self) -> str:
        if self.target == LATEST:
            return "the end of the archive"
        return f"recovery_target_{self.target} {self.value}"


@dataclass(frozen=True)
class Layout:
    """Everything a clone's creation needs to know, checked."""

    origin: Origin
    name: str
    snapshot: str  # the part after '@', on both datasets
    port: int
    listen: str  # the address the clone listens on
    allowed: tuple[str, ...]  # CIDRs its role may connect from
    role: str
    socket_dir: str
    os_uid: int | None = None  # the OS user its PostgreSQL runs as; None: the owner (old)
    recovery: Recovery | None = None  # a point-in-time clone's replay; None: the snapshot

    @classmethod
    def from_stored(cls, values: dict) -> Layout:
        """The layout a clone's row (or an operation's state) keeps as JSON (stored())."""
        values = dict(values)
        recovery = values.pop("recovery", None)
        return cls(origin=Origin(**values.pop("origin")),
                   recovery=Recovery(**recovery) if recovery else None,
                   **{**values, "allowed": tuple(values["allowed"])})

    def stored(self) -> dict:
        """The layout as JSON keeps it: the one form from_stored() reads back."""
        values = asdict(self)
        values["allowed"] = list(self.allowed)
        return values

    def __post_init__(self) -> None:
        clone_name(self.name)
        dataset_name(f"{self.origin.data_dataset}@{self.snapshot}".split("@")[0])
        if not self.snapshot or "@" in self.snapshot or "/" in self.snapshot:
            raise CloneError("snapshot", f"Not a snapshot label: {self.snapshot!r}.")
        try:
            integer(self.port, minimum=1024, maximum=65535)
            pg_identifier(self.role)
            abs_path(self.socket_dir)
            if self.os_uid is not None:
                integer(self.os_uid, minimum=UID_BASE_MIN, maximum=2**31 - 1)
        except InvalidValue as exc:
            raise CloneError(exc.kind, str(exc)) from None
        ipaddress.ip_address(self.listen)
        for cidr in self.allowed:
            ipaddress.ip_network(cidr, strict=False)

    @property
    def pool(self) -> str:
        return self.origin.data_dataset.split("/")[0]

    @property
    def root(self) -> str:
        return f"{self.pool}/{CLONES_PARENT}/{self.name}"

    @property
    def data_clone(self) -> str:
        return f"{self.root}/data"

    @property
    def wal_clone(self) -> str | None:
        return f"{self.root}/wal" if self.origin.wal_dataset else None

    @property
    def archive_clone(self) -> str | None:
        return f"{self.root}/wal_archive" if self.recovery else None

    @property
    def data_below(self) -> str:
        """The data directory's path below its dataset's mountpoint ("pgdata", or "")."""
        return _relative(self.origin.data_dir, self.origin.data_mountpoint)

    @property
    def wal_below(self) -> str:
        assert self.origin.wal_dir and self.origin.wal_mountpoint
        return _relative(self.origin.wal_dir, self.origin.wal_mountpoint)

    def settings(self) -> dict[str, str]:
        values = {**CLONE_SETTINGS, "port": str(self.port), "listen_addresses": self.listen,
                  "unix_socket_directories": self.socket_dir}
        if (self.origin.server_version_num or 0) >= 140000:
            # Crash recovery (every clone of a live cluster) first fsyncs every file of
            # the data directory, a cost that grows with the database: 0.25 of the 0.5 s
            # pg_ctl took at pgbench scale 100 here. The clone's files come from an
            # immutable snapshot, so one syncfs() per file system does as well.
            values["recovery_init_sync_method"] = "syncfs"
        if self.recovery is not None:
            values |= self.recovery.settings()
        if self.origin.external_config:
            values |= {"ssl": "off", "cluster_name": f"pozol-{self.name}"}
            if (self.origin.server_version_num or 0) < 150000:
                # Debian points it at /var/run/postgresql before 15 (gone in 15).
                values["stats_temp_directory"] = "pg_stat_tmp"
        return values

    def auto_conf(self) -> str:
        lines = [f"{name} = '{_conf_value(value)}'" for name, value in self.settings().items()]
        return "# PoZoL clone settings: read last, they win\n" + "\n".join(lines) + "\n"

    def hba(self) -> str:
        lines = ["# PoZoL clone: the owner over its socket, the clone's role from the "
                 "allowed addresses, nothing else",
                 f"local all {self.origin.owner} "
                 f"{'trust' if self.os_uid is not None else 'peer'}"]
        lines += [f"host all {self.role} {ipaddress.ip_network(c, strict=False)} "
                  "scram-sha-256" for c in self.allowed]
        return "\n".join(lines) + "\n"

    def server_user(self) -> list[str]:
        """The command prefix that runs the clone's server programs (pg_ctl) as its user:
        setpriv takes numeric ids, so no passwd entry is needed."""
        if self.os_uid is None:
            return ["runuser", "-u", self.origin.owner, "--"]
        return ["setpriv", f"--reuid={self.os_uid}", f"--regid={self.os_uid}",
                "--clear-groups", "--"]

    def client_user(self) -> list[str]:
        """The command prefix of PoZoL's own clients in the clone (psql -U <owner>): root,
        the one user besides the clone's that enters its socket directory."""
        return [] if self.os_uid is not None else ["runuser", "-u", self.origin.owner, "--"]

    def connection_string(self) -> str:
        return f"postgresql://{self.role}@{self.listen}:{self.port}/postgres"


def _below(path: str, mountpoint: str) -> bool:
    return path == mountpoint or path.startswith(mountpoint.rstrip("/") + "/")


def _relative(path: str, mountpoint: str) -> str:
    return path[len(mountpoint.rstrip("/")):].lstrip("/")


def _conf_value(value: str) -> str:
    if "'" in value or "\\" in value or "\n" in value:
        raise CloneError("settings", f"Not a safe configuration value: {value!r}.")
    return value
