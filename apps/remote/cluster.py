"""One PostgreSQL cluster on a host, as the commands that reach it: psql, pg_ctl, pgbench.

Discovery, tuning and benchmarks (and next, snapshots and clones) reach a
cluster the same way, so they do it through this one target:

- as the cluster's owner, through `runuser`: peer authentication over the
  unix socket lets the owner in without a password on a stock cluster;
- over the cluster's unix socket (TCP is not tried: it would need a password);
- from `/`: sshd starts commands in root's home, which the owner cannot read,
  and PostgreSQL's programs then print `could not change directory to "/root"`
  on every call while resolving their own path.

Starting, stopping, restarting and reloading go through `control`, the one place
that decides how (issue 21): `systemctl <action> postgresql@<major>-<name>` when
systemd runs the cluster as its unit (so systemd never finds its service stopped or
restarted behind its back), `pg_ctlcluster` when Debian's postgresql-common manages it
without systemd, else `pg_ctl -D` as the owner. PgCluster.control() says which applies
from discovery's facts (the unit only while systemd is PID 1).

Every value is checked once, when the target is made. A command's `shown`
text, the one that is logged, is what was done (the SQL with its variables,
the pgbench command line) without the runuser and cd scaffolding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from apps.remote.commands import (
    Command,
    Direct,
    InvalidValue,
    abs_path,
    cmd,
    dbname_conninfo,
    integer,
    os_user,
    pg_identifier,
    quote,
)

PSQL_TIMEOUT_SECONDS = 30
PG_CTL_TIMEOUT_SECONDS = 120
# `cd /` before the owner's program runs; "$@" is the program and its arguments,
# so they stay plain quoted arguments and the template nests anywhere a command does.
_FROM_ROOT = 'cd / && exec "$@"'
_VARIABLE = re.compile(r":(['\"])([a-z_][a-z0-9_]*)\1")
_UNIT = re.compile(r"postgresql@[A-Za-z0-9_.-]+\.service\Z")
_PACKAGED = re.compile(r"\d+(?:\.\d+)?/[A-Za-z0-9_.-]+\Z")
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9_./-]*\Z")
ACTIONS = ("start", "stop", "restart", "reload")


@dataclass(frozen=True)
class ClusterTarget:
    """Where to reach one cluster: checked against the naming rules once, here."""

    owner: str
    bin_dir: str
    socket_dir: str
    port: int
    data_dir: str | None = None  # needed by pg_ctl only
    database: str = "postgres"
    unit: str | None = None  # its systemd unit, when systemd runs it
    packaged_as: str | None = None  # "<major>/<name>" when postgresql-common manages it
    config_file: str | None = None  # postgresql.conf when outside the data directory

    def __post_init__(self) -> None:
        os_user(self.owner)
        abs_path(self.bin_dir)
        if not self.socket_dir:
            raise InvalidValue("socket directory", self.socket_dir,
                               "the cluster listens on no unix socket (TCP is not tried)")
        abs_path(self.socket_dir)
        integer(self.port, minimum=1, maximum=65535)
        if self.data_dir is not None:
            abs_path(self.data_dir)
        pg_identifier(self.database)
        if self.unit is not None and not _UNIT.match(self.unit):
            raise InvalidValue("systemd unit", self.unit, "postgresql@<major>-<name>.service")
        if self.packaged_as is not None and not _PACKAGED.match(self.packaged_as):
            raise InvalidValue("packaged cluster", self.packaged_as, "<major>/<name>")
        if self.config_file is not None and not _PLAIN_PATH.match(abs_path(self.config_file)):
            # pg_ctl hands -o to a shell: a path it would split is refused here.
            raise InvalidValue("configuration file", self.config_file,
                               "an absolute path of letters, digits and _ . / -")

    @classmethod
    def of(cls, **values: object) -> ClusterTarget:
        """The target from loose values (a model row, an operation's saved state)."""
        return cls(**values)  # type: ignore[arg-type]

    def as_state(self) -> dict:
        """The target as an operation's state keeps it (ClusterTarget.of reads it back)."""
        return {"owner": self.owner, "bin_dir": self.bin_dir, "socket_dir": self.socket_dir,
                "port": self.port, "data_dir": self.data_dir, "unit": self.unit,
                "packaged_as": self.packaged_as, "config_file": self.config_file}

    @property
    def conninfo(self) -> str:
        """The database as psql -d and pgbench take it: a name, never a connection
        string (apps.remote.commands.dbname_conninfo)."""
        return dbname_conninfo(self.database)

    def as_owner(self, program: str, *args: str | int, timeout: int | None = None,
                 shown: str | None = None) -> Command:
        """`program` from the cluster's bin_dir, run as the owner from `/`."""
        limit = ["timeout", integer(timeout, minimum=1)] if timeout else []
        command = cmd("sh", "-c", _FROM_ROOT, "sh", *limit, "runuser", "-u", self.owner, "--",
                      f"{self.bin_dir}/{program}", *args)
        plain = " ".join(quote(a) for a in (program, *args))
        direct = Direct((f"{self.bin_dir}/{program}", *(str(a) for a in args)),
                        user=self.owner, timeout=timeout)
        return Command(command.text, shown=shown or f"{plain}  (as {self.owner})", direct=direct)

    def client(self, program: str, *args: str | int, timeout: int | None = None) -> Command:
        """A client program (psql, pgbench) connected over the cluster's socket."""
        return self.as_owner(program, "-h", self.socket_dir, "-p", self.port, *args,
                             timeout=timeout)

    def psql(self, sql: str, *, database: str | None = None, **variables: str) -> Command:
        """psql running `sql` in one transaction-less session, tab-separated, unaligned.

        Values travel as psql variables (`:'value'` a literal, `:"name"` an
        identifier), so psql quotes them; psql interpolates variables only in
        what it reads, not in `-c`, so SQL with variables goes on stdin. The database
        goes to -d bare: a pg_identifier has no `=` and no `:`, so psql cannot read it
        as a connection string (a name that could be one is refused when the target is
        made; a name from a host's listing uses `conninfo`).
        """
        database = pg_identifier(database or self.database)
        flags = [f"--set={pg_identifier(name)}={value}" for name, value in variables.items()]
        source = ["-c", sql] if not variables else []
        command = self.client("psql", "-X", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                              "-d", database, *flags, *source, timeout=PSQL_TIMEOUT_SECONDS)
        shown = f"psql -d {database}  (as {self.owner}): {_with_values(sql, variables)}"
        return Command(command.text, shown=shown,
                       stdin=sql.encode() if variables else None, direct=command.direct)

    def control(self, action: str) -> Command:
        """Start, stop (fast), restart (fast) or reload the cluster the way the host runs it:
        its systemd unit, postgresql-common's pg_ctlcluster, or pg_ctl."""
        if action not in ACTIONS:
            raise InvalidValue("cluster action", action, "start, stop, restart or reload")
        if self.unit is not None:
            unit = self.unit.removesuffix(".service")
            command = cmd("sh", "-c", _FROM_ROOT, "sh", "timeout", PG_CTL_TIMEOUT_SECONDS + 30,
                          "systemctl", action, unit)
            return Command(command.text, shown=f"systemctl {action} {unit}")
        if self.packaged_as is not None:
            major, name = self.packaged_as.split("/", 1)
            mode = ["--mode", "fast"] if action in ("stop", "restart") else []
            command = cmd("sh", "-c", _FROM_ROOT, "sh", "timeout", PG_CTL_TIMEOUT_SECONDS + 30,
                          "pg_ctlcluster", *mode, major, name, action)
            return Command(command.text,
                           shown=" ".join(["pg_ctlcluster", *mode, major, name, action]))
        return self.pg_ctl(action)

    def pg_ctl(self, action: str) -> Command:
        """pg_ctl -D itself: `control` is what starts and stops a cluster; this is its last
        resort, and `status`."""
        if action not in ("start", "stop", "restart", "reload", "status"):
            raise InvalidValue("pg_ctl action", action, "start, stop, restart, reload or status")
        if self.data_dir is None:
            raise InvalidValue("data directory", None, "pg_ctl needs the cluster's data directory")
        # A start reads no postmaster.opts (a restart does): a configuration outside the
        # data directory is named, as Debian's pg_ctlcluster names it.
        options = (["-o", f"-c config_file={self.config_file}"]
                   if self.config_file and action == "start" else [])
        return self.as_owner("pg_ctl", "-D", self.data_dir, "-m", "fast", "-w",
                             "-t", PG_CTL_TIMEOUT_SECONDS, *options, action)


def _with_values(sql: str, variables: dict[str, str]) -> str:
    """The SQL as the server receives it, on one line, for people to read in the log."""
    def value(match: re.Match[str]) -> str:
        text = variables.get(match.group(2))
        if text is None:
            return match.group(0)
        if match.group(1) == "'":
            return "'" + text.replace("'", "''") + "'"
        return '"' + text.replace('"', '""') + '"'

    return " ".join(_VARIABLE.sub(value, sql).split())
