"""PostgreSQL facts: running postmasters, postmaster.pid, pg_settings, data placement."""

from __future__ import annotations

from dataclasses import dataclass

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
        if len(fields) >= 4 and fields[0].isdigit() and fields[1].isdigit():
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
    return int(text) if text.isdigit() else None


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
