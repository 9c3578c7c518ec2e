"""PostgreSQL facts: running postmasters, postmaster.pid, pg_settings, data placement,
replication (standbys, slots) and checkpoint counters."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from apps.remote.facts.numbers import is_digits

# Columns in this order; psql -A -t prints NULL as an empty field.
SETTINGS_COLUMNS = (
    "name", "setting", "unit", "context", "vartype", "source", "boot_val", "pending_restart",
)
SETTINGS_QUERY = (
    "select name, setting, unit, context, vartype, source, boot_val, pending_restart"
    " from pg_settings order by name"
)
_POSTMASTER_NAMES = {"postgres", "postmaster"}


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    user: str
    args: str

    @property
    def program(self) -> str:
        return self.args.split(" ", 1)[0]


def parse_ps(text: str) -> list[Process]:
    """`ps -eo pid,ppid,user,args` (header line skipped)."""
    processes = []
    for line in text.splitlines():
        fields = line.split(None, 3)
        if len(fields) >= 4 and is_digits(fields[0]) and is_digits(fields[1]):
            processes.append(Process(int(fields[0]), int(fields[1]), fields[2], fields[3]))
    return processes


def find_postmasters(processes: list[Process]) -> list[Process]:
    """Postmasters, not their children: children retitle themselves
    (`postgres: checkpointer`), so their first word no longer names the binary."""
    candidates = [p for p in processes if p.program.rsplit("/", 1)[-1] in _POSTMASTER_NAMES]
    pids = {p.pid for p in candidates}
    return [p for p in candidates if p.ppid not in pids]


@dataclass(frozen=True)
class PostmasterPid:
    pid: int | None
    data_dir: str
    start_epoch: int | None
    port: int | None
    socket_dir: str | None  # first of unix_socket_directories; None when there is none
    listen_addresses: str | None
    shmem_key: str | None
    status: str | None  # "ready", "starting", "stopping", "standby" (PG 10+)


def parse_postmaster_pid(text: str) -> PostmasterPid:
    """The data directory's postmaster.pid: one value per line, later lines optional."""
    lines = [line.strip() for line in text.splitlines()] + [""] * 8
    return PostmasterPid(
        pid=_int(lines[0]),
        data_dir=lines[1],
        start_epoch=_int(lines[2]),
        port=_int(lines[3]),
        socket_dir=lines[4] or None,
        listen_addresses=lines[5] or None,
        shmem_key=lines[6] or None,
        status=lines[7] or None,
    )


def _int(text: str) -> int | None:
    return int(text) if is_digits(text) else None


@dataclass(frozen=True)
class Setting:
    name: str
    setting: str
    unit: str | None
    context: str
    vartype: str
    source: str
    boot_val: str | None
    pending_restart: bool


def parse_settings(text: str) -> list[Setting]:
    """Rows of SETTINGS_QUERY from `psql -X -At -F <TAB>`.

    A value holding a tab or newline breaks its row; such rows are dropped
    rather than guessed at.
    """
    settings = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == len(SETTINGS_COLUMNS) and fields[7] in {"t", "f"}:
            settings.append(_setting(fields))
    return settings


def _setting(fields: list[str]) -> Setting:
    name, setting, unit, context, vartype, source, boot_val, pending = fields
    return Setting(
        name, setting, unit or None, context, vartype, source, boot_val or None, pending == "t"
    )


def find_setting(settings: list[Setting], name: str) -> Setting | None:
    """The pg_settings row named `name`: the one lookup over parsed rows."""
    return next((s for s in settings if s.name == name), None)


def setting_value(settings: list[Setting], name: str) -> str | None:
    found = find_setting(settings, name)
    return found.setting if found else None


def setting_row(rows: list[dict], name: str) -> dict | None:
    """The stored pg_settings row named `name` (Setting as a dict), as PgCluster.settings
    keeps them; tuning reads typed Settings (apps.tuning.core.facts.setting)."""
    return next((row for row in rows if row.get("name") == name), None)


def dataset_for_path(path: str | None, mountpoints: dict[str, str]) -> str | None:
    """The dataset whose mountpoint is the longest whole-component prefix of path."""
    if not path:
        return None
    best: tuple[int, str] | None = None
    for dataset, mountpoint in mountpoints.items():
        root = mountpoint.rstrip("/") or "/"
        inside = path == root or path.startswith(root if root == "/" else root + "/")
        if inside and (best is None or len(root) > best[0]):
            best = (len(root), dataset)
    return best[1] if best else None


# -- replication and checkpoints ---------------------------------------------------------
# `key<TAB>value` rows, so the parser never depends on row order; a slot is the
# one row with more fields (slot names are [a-z0-9_] only, so never hold a tab).
# The checkpoint counters moved from pg_stat_bgwriter (checkpoints_timed,
# checkpoints_req) to pg_stat_checkpointer (num_timed, num_requested) in 17.
_REPLICATION = (
    "SELECT 'in_recovery', pg_is_in_recovery()::text"
    " UNION ALL SELECT 'standbys', count(*)::text FROM pg_stat_replication"
    " UNION ALL SELECT 'slot', slot_name || E'\\t' || slot_type || E'\\t' || active::text"
    " FROM pg_replication_slots"
)
_BGWRITER = (
    " UNION ALL SELECT 'checkpoints_timed', checkpoints_timed::text FROM pg_stat_bgwriter"
    " UNION ALL SELECT 'checkpoints_requested', checkpoints_req::text FROM pg_stat_bgwriter"
    " UNION ALL SELECT 'stats_reset', stats_reset::text FROM pg_stat_bgwriter"
)
_CHECKPOINTER = (
    " UNION ALL SELECT 'checkpoints_timed', num_timed::text FROM pg_stat_checkpointer"
    " UNION ALL SELECT 'checkpoints_requested', num_requested::text FROM pg_stat_checkpointer"
    " UNION ALL SELECT 'stats_reset', stats_reset::text FROM pg_stat_checkpointer"
)


def stats_query(major: int | None) -> str:
    """Standbys, slots and checkpoint counters, for a server of this major version."""
    return _REPLICATION + (_CHECKPOINTER if major and major >= 17 else _BGWRITER)


def major_of(pg_version: str | None) -> int | None:
    """PG_VERSION's content: "15" from 10 on, "9.6" before."""
    head = (pg_version or "").split(".", 1)[0]
    return int(head) if is_digits(head) else None


@dataclass(frozen=True)
class ReplicationSlot:
    name: str
    type: str  # "physical" or "logical"
    active: bool


@dataclass(frozen=True)
class ServerStats:
    """What stats_query() answered; None where a row was missing or unreadable."""
    in_recovery: bool | None = None
    standbys: int | None = None  # rows of pg_stat_replication: streaming standbys now
    slots: list[ReplicationSlot] = field(default_factory=list)
    checkpoints_timed: int | None = None
    checkpoints_requested: int | None = None
    stats_reset: str | None = None  # the server's text, e.g. "2026-11-23 22:04:39.1+00"


def parse_stats(text: str) -> ServerStats:
    """Rows of stats_query() from `psql -X -At -F <TAB>`."""
    values: dict[str, str] = {}
    slots = []
    for line in text.splitlines():
        fields = line.split("\t")
        if fields[0] == "slot" and len(fields) == 4 and fields[3] in {"true", "false"}:
            slots.append(ReplicationSlot(fields[1], fields[2], fields[3] == "true"))
        elif len(fields) == 2:
            values[fields[0]] = fields[1]
    recovery = values.get("in_recovery")
    return ServerStats(
        in_recovery={"true": True, "false": False}.get(recovery or ""),
        standbys=_int(values.get("standbys", "")),
        slots=slots,
        checkpoints_timed=_int(values.get("checkpoints_timed", "")),
        checkpoints_requested=_int(values.get("checkpoints_requested", "")),
        stats_reset=values.get("stats_reset") or None,
    )


# -- packaged layout: where the configuration lives and who starts the cluster --------------
# Debian's postgresql-common keeps a cluster's configuration in
# /etc/postgresql/<major>/<name>/ (pg_createcluster writes postgresql.conf, pg_hba.conf,
# pg_ident.conf, conf.d/ and start.conf there) and systemd runs it as the instance
# `postgresql@<major>-<name>` of its template unit.
_DEBIAN_CONFIG = re.compile(r"/etc/postgresql/(\d+(?:\.\d+)?)/([^/\s]+)/postgresql\.conf\Z")
_UNIT = re.compile(r"(postgresql@[A-Za-z0-9_.@-]+\.service)\Z")


def debian_cluster(config_file: str | None) -> tuple[str, str] | None:
    """(major, name) when the configuration file is postgresql-common's, else None."""
    found = _DEBIAN_CONFIG.match(config_file or "")
    return (found.group(1), found.group(2)) if found else None


def parse_cgroup_unit(text: str) -> str | None:
    """The postgresql@ unit a postmaster runs in, from /proc/PID/cgroup; None when systemd
    does not run it. cgroup v2 has one `0::/path` line, v1 one per hierarchy (the
    `name=systemd` one names the unit); either way the unit is the path's last part, e.g.
    `0::/system.slice/system-postgresql.slice/postgresql@17-main.service`."""
    for line in text.splitlines():
        path = line.split(":", 2)[-1].strip()
        found = _UNIT.search(path.rsplit("/", 1)[-1])
        if found:
            return found.group(1)
    return None


@dataclass(frozen=True)
class PostgresqlCommon:
    """What postgresql-common (Debian's packaging) offers on a host."""

    pg_ctlcluster: bool  # the program is installed
    clusters: frozenset[str] = frozenset()  # "<major>/<name>" with a start.conf

    def manages(self, cluster: tuple[str, str] | None) -> bool:
        return bool(self.pg_ctlcluster and cluster and "/".join(cluster) in self.clusters)


# Debian's layout (postgresql-common) and the PGDG RPMs' (Red Hat and its kin).
_INITDB = (re.compile(r"(/usr/lib/postgresql/(\d+)/bin)/initdb\Z"),
           re.compile(r"(/usr/pgsql-(\d+)/bin)/initdb\Z"))


def parse_installed(text: str) -> dict[str, str]:
    """The output of INSTALLED_PROBE, one initdb path a line: each major ("17") installed
    from packages and the directory of its binaries, whether a cluster of it runs or not.
    A major found in both layouts keeps Debian's."""
    found: dict[str, str] = {}
    for layout in _INITDB:
        for line in text.splitlines():
            match = layout.match(line.strip())
            if match:
                found.setdefault(match.group(2), match.group(1))
    return found


def parse_postgresql_common(text: str) -> PostgresqlCommon:
    """The output of PG_COMMON_PROBE: pg_ctlcluster's path when installed, then each
    /etc/postgresql/<major>/<name>/start.conf that exists."""
    found, clusters = False, set()
    for line in text.splitlines():
        line = line.strip()
        if line.endswith("/pg_ctlcluster"):
            found = True
        match = re.match(r"/etc/postgresql/(\d+(?:\.\d+)?)/([^/\s]+)/start\.conf\Z", line)
        if match:
            clusters.add(f"{match.group(1)}/{match.group(2)}")
    return PostgresqlCommon(found, frozenset(clusters))
