"""Pool facts: `zpool list`, `zpool get ashift` and `zpool status` as a vdev tree."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from apps.remote.facts.numbers import is_digits
from apps.remote.facts.zfs import parse_size

# zfs-fuse knows neither `-p` nor `fragmentation`: it gets the shorter list.
OPENZFS_LIST_COLUMNS = ("name", "size", "allocated", "free", "fragmentation", "capacity", "health")
ZFS_FUSE_LIST_COLUMNS = ("name", "size", "allocated", "free", "capacity", "health")


SECTIONS = ("logs", "cache", "spares", "special", "dedup")
_GROUP = re.compile(r"(mirror|raidz\d?|draid\d?|replacing|spare)-?")


def list_columns(fragmentation: bool) -> tuple[str, ...]:
    return OPENZFS_LIST_COLUMNS if fragmentation else ZFS_FUSE_LIST_COLUMNS


@dataclass(frozen=True)
class PoolRow:
    name: str
    size: int | None
    allocated: int | None
    free: int | None
    fragmentation: int | None  # percent; None when unknown or not reported
    capacity: int | None  # percent
    health: str
    exact: bool  # False when sizes were converted from human units


def parse_zpool_list(text: str, columns: tuple[str, ...]) -> list[PoolRow]:
    """`zpool list -H [-p] -o <columns>`; the columns must name at least those of PoolRow."""
    rows = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == len(columns):
            rows.append(_pool_row(dict(zip(columns, fields, strict=True))))
    return rows


def _pool_row(row: dict[str, str]) -> PoolRow:
    sizes = {key: parse_size(row[key]) for key in ("size", "allocated", "free")}
    return PoolRow(
        name=row["name"],
        size=sizes["size"][0],
        allocated=sizes["allocated"][0],
        free=sizes["free"][0],
        fragmentation=parse_percent(row.get("fragmentation", "-")),
        capacity=parse_percent(row["capacity"]),
        health=row["health"],
        exact=all(exact for _, exact in sizes.values()),
    )


def parse_percent(text: str) -> int | None:
    text = text.strip().rstrip("%")
    return int(text) if is_digits(text) else None


# What `zpool get feature@NAME` says of a feature the pool knows (zpool-features(7)).
FEATURE_STATES = ("disabled", "enabled", "active")


def parse_zpool_get(text: str, prop: str) -> dict[str, str]:
    """`zpool get -Hp PROP` (tabs) or zfs-fuse's `zpool get PROP` (header, spaces)."""
    values = {}
    for line in text.splitlines():
        fields = line.split("\t") if "\t" in line else line.split()
        if len(fields) >= 3 and fields[1] == prop and fields[0] != "NAME":
            values[fields[0]] = fields[2]
    return values


@dataclass
class Vdev:
    name: str
    kind: str  # disk, file, mirror, raidz1, draid2, replacing, spare, ...
    state: str
    read: int | None = None
    write: int | None = None
    cksum: int | None = None
    note: str = ""  # e.g. "(resilvering)" or "was /dev/sdb1"
    children: list[Vdev] = field(default_factory=list)


@dataclass
class PoolStatus:
    name: str
    state: str
    errors: str = ""
    vdevs: list[Vdev] = field(default_factory=list)
    logs: list[Vdev] = field(default_factory=list)
    cache: list[Vdev] = field(default_factory=list)
    spares: list[Vdev] = field(default_factory=list)
    special: list[Vdev] = field(default_factory=list)
    dedup: list[Vdev] = field(default_factory=list)
    last_scrub: str | None = None  # ISO time the last completed scrub ended (host's local time)

    @property
    def has_log(self) -> bool:
        return bool(self.logs)

    @property
    def has_cache(self) -> bool:
        return bool(self.cache)


def parse_zpool_status(text: str) -> dict[str, PoolStatus]:
    """`zpool status [pool...]`: one PoolStatus per `pool:` block."""
    pools = {}
    for block in re.split(r"^(?=\s*pool: )", text, flags=re.M):
        status = _parse_block(block)
        if status:
            pools[status.name] = status
    return pools


def _parse_block(block: str) -> PoolStatus | None:
    header = dict(_header_lines(block))
    if "pool" not in header:
        return None
    status = PoolStatus(header["pool"], header.get("state", "UNKNOWN"), header.get("errors", ""),
                        last_scrub=parse_scrub_end(header.get("scan", "")))
    _read_config(status, _config_lines(block))
    return status


def _header_lines(block: str):
    for line in block.splitlines():
        match = re.match(r"\s*(pool|state|scan|errors): ?(.*)\Z", line)
        if match:
            yield match[1], match[2].strip()


_SCRUB_DONE = re.compile(r"scrub repaired .* on (\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})")


def parse_scrub_end(scan: str) -> str | None:
    """When the last completed scrub ended, from the `scan:` line, as ISO text.

    "scrub repaired 0B in 00:12:41 with 0 errors on Sun Sep  8 00:36:42 2024"; a
    resilver, a scrub in progress or "none requested" tell nothing about the last scrub.
    """
    match = _SCRUB_DONE.search(scan)
    return parse_ctime(match[1]) if match else None


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_CTIME = re.compile(r"\w{3} (\w{3}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})")


def parse_ctime(text: str) -> str | None:
    """ctime()'s "Sun Sep  8 00:36:42 2024" (English in every C library locale) as ISO text.

    By hand rather than strptime("%a %b"), which reads month names in the worker's
    LC_TIME and so would refuse the English ones under a German locale.
    """
    match = _CTIME.fullmatch(" ".join(text.split()))
    if not match or match[1] not in _MONTHS:
        return None
    month = _MONTHS.index(match[1]) + 1
    try:
        return datetime(int(match[6]), month, *map(int, match.group(2, 3, 4, 5))).isoformat()
    except ValueError:
        return None


def _config_lines(block: str) -> list[str]:
    """The vdev rows: after the NAME/STATE header, up to the first blank line."""
    lines, inside = [], False
    for line in block.splitlines():
        if re.match(r"\s*NAME\s+STATE\s+READ", line):
            inside = True
        elif inside and not line.strip():
            break
        elif inside:
            lines.append(line.lstrip("\t"))
    return lines


def _read_config(status: PoolStatus, lines: list[str]) -> None:
    # Rows nest by two spaces; the pool itself and the logs/cache/... headings
    # sit at depth 0, so a depth-1 row is a top-level vdev of the current section.
    section: list[Vdev] = status.vdevs
    stack: list[Vdev] = []
    for line in lines:
        depth = (len(line) - len(line.lstrip(" "))) // 2
        fields = line.split()
        if depth == 0:
            section = getattr(status, fields[0]) if fields[0] in SECTIONS else status.vdevs
            stack = []
            continue
        vdev = _vdev(fields)
        del stack[depth - 1:]
        (stack[-1].children if stack else section).append(vdev)
        stack.append(vdev)


def _vdev(fields: list[str]) -> Vdev:
    name, state, *rest = fields + [""] * (2 - len(fields))
    counts = [parse_size(value)[0] if value.replace(".", "").isalnum() else None
              for value in rest[:3]]
    counts += [None] * (3 - len(counts))
    return Vdev(name, _kind(name), state, *counts, note=" ".join(rest[3:]))


def _kind(name: str) -> str:
    match = _GROUP.match(name)
    if match and (is_digits(name[match.end():]) or "-" in name):
        return match[1]
    if name.startswith("/") and not name.startswith("/dev/"):
        return "file"
    return "disk"
