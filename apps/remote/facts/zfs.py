"""ZFS facts: implementation, version, dialect, capabilities, `zfs list`, `zfs get`.

Two dialects are met in fleets: OpenZFS 2.x (`zfs version`, `-p` everywhere,
kstats in /proc/spl) and the older zfs-fuse (pool version 23, no `zfs version`,
no `-p` on `list`, human sizes, no `sync` property). The dialect is detected
from what the host answers, never assumed from a distribution name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from apps.remote.facts.numbers import is_digits

OPENZFS = "openzfs"
ZFS_FUSE = "zfs-fuse"

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
_SIZE = re.compile(r"(?P<number>\d+(?:\.\d+)?)(?P<suffix>[BKMGTPEZ]?)\Z")
_SUFFIX_POWER = {"": 0, "B": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6, "Z": 7}
_BASE_COMPRESSION = ("on", "off", "lzjb", "gzip", *(f"gzip-{n}" for n in range(1, 10)), "zle")
_ZSTD = ("zstd", *(f"zstd-{n}" for n in range(1, 20)), "zstd-fast")


@dataclass(frozen=True)
class ZfsVersion:
    userland: str | None  # e.g. "2.2.0-1" (from `zfs version` line 1)
    kernel: str | None  # e.g. "2.1.5-1ubuntu6" (line 2, or /sys/module/zfs/version)


@dataclass(frozen=True)
class Capabilities:
    version_command: bool
    list_parsable: bool  # `zfs list -p`
    zpool_list_parsable: bool  # `zpool list -p`
    zpool_fragmentation: bool
    sync_property: bool
    redundant_metadata_property: bool
    compression: tuple[str, ...]
    resumable_send: bool
    json_output: bool
    module_params: bool
    multi_snapshot: bool  # `zfs snapshot a@s b@s` in one atomic command


def parse_zfs_version(text: str) -> ZfsVersion:
    """`zfs version`: `zfs-2.2.0-1` then `zfs-kmod-2.2.0-1`."""
    userland = kernel = None
    for line in text.split():
        if line.startswith("zfs-kmod-"):
            kernel = line.removeprefix("zfs-kmod-")
        elif line.startswith("zfs-") and _VERSION.match(line.removeprefix("zfs-")):
            userland = line.removeprefix("zfs-")
    return ZfsVersion(userland, kernel)


def version_tuple(version: str | None) -> tuple[int, int, int] | None:
    """(2, 2, 0) from "2.2.0-1ubuntu1"; None when there is no version."""
    match = _VERSION.match(version or "")
    if not match:
        return None
    return int(match[1]), int(match[2]), int(match[3] or 0)


def is_unknown_command(text: str) -> bool:
    return "unrecognized command" in text


def is_invalid_option(text: str, option: str) -> bool:
    return f"invalid option '{option}'" in text


def is_invalid_property(text: str, prop: str) -> bool:
    """zfs-fuse's `bad property list: invalid property 'sync'`."""
    return f"invalid property '{prop}'" in text


_USAGE_LINE = re.compile(
    r"\s+(?P<prop>[a-z_@.]+)\s+(?:YES|NO)\s+(?:(?:YES|NO)\s+)?(?P<values>.*)\Z"
)


def usage_properties(text: str) -> dict[str, str]:
    """The property table zfs/zpool print with their usage after a refused command.

    zfs-fuse lists only what it supports, so the table itself is a capability fact.
    """
    table = {}
    for line in text.splitlines():
        match = _USAGE_LINE.match(line)
        if match:
            table[match["prop"]] = match["values"].strip()
    return table


def usage_values(text: str, prop: str) -> tuple[str, ...]:
    """The values a usage table allows for prop: `on | off | lzjb` -> ("on", "off", "lzjb")."""
    values = usage_properties(text).get(prop, "")
    return tuple(value.strip() for value in values.split("|") if value.strip())


def baseline_capabilities(dialect: str, version: ZfsVersion) -> Capabilities:
    """What a dialect offers by its documentation; probes then correct it."""
    if dialect == ZFS_FUSE:
        return _zfs_fuse_capabilities()
    userland = version_tuple(version.userland) or (0, 0, 0)
    return Capabilities(
        version_command=True,
        list_parsable=True,
        zpool_list_parsable=True,
        zpool_fragmentation=True,
        sync_property=True,
        redundant_metadata_property=True,
        compression=(*_BASE_COMPRESSION, "lz4", *(_ZSTD if userland >= (2, 0, 0) else ())),
        resumable_send=True,
        json_output=userland >= (2, 3, 0),  # `-j` is a CLI feature: the userland decides
        module_params=True,
        multi_snapshot=True,
    )


def _zfs_fuse_capabilities() -> Capabilities:
    return Capabilities(
        version_command=False,
        list_parsable=False,
        zpool_list_parsable=False,
        zpool_fragmentation=False,
        sync_property=False,
        redundant_metadata_property=False,
        compression=_BASE_COMPRESSION,
        resumable_send=False,
        json_output=False,
        module_params=False,
        multi_snapshot=False,
    )


def with_observed(caps: Capabilities, **observed: object) -> Capabilities:
    """Capabilities corrected by what the host actually answered."""
    return replace(caps, **observed)  # type: ignore[arg-type]


def parse_size(text: str) -> tuple[int | None, bool]:
    """Bytes from `12345` (exact) or zfs-fuse's `1.06M` (rounded: 1024-based, best effort).

    Returns (bytes, exact). `-` and `none` are (None, True).
    """
    text = text.strip()
    if text in {"-", "none", ""}:
        return None, True
    if is_digits(text):
        return int(text), True
    match = _SIZE.match(text.upper())
    if not match:
        return None, False
    return round(float(match["number"]) * 1024 ** _SUFFIX_POWER[match["suffix"]]), False


@dataclass(frozen=True)
class DatasetRow:
    name: str
    type: str
    used: int | None
    avail: int | None
    refer: int | None
    mountpoint: str | None  # None for "-", "none" and "legacy"
    exact: bool  # False when sizes were converted from human units


LIST_FIELDS = ("name", "type", "used", "avail", "refer", "mountpoint")


def parse_zfs_list(text: str) -> list[DatasetRow]:
    """`zfs list -H [-p] -o name,type,used,avail,refer,mountpoint`."""
    rows = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == len(LIST_FIELDS):
            rows.append(_dataset_row(fields))
    return rows


def _dataset_row(fields: list[str]) -> DatasetRow:
    name, kind, *sizes, mountpoint = fields
    (used, e1), (avail, e2), (refer, e3) = (parse_size(size) for size in sizes)
    return DatasetRow(
        name=name,
        type=kind,
        used=used,
        avail=avail,
        refer=refer,
        mountpoint=mountpoint if mountpoint.startswith("/") else None,
        exact=e1 and e2 and e3,
    )


@dataclass(frozen=True)
class PropertyValue:
    value: str | None  # None for "-" (not applicable or unreadable)
    source: str  # local, default, inherited, received, temporary, "-"
    inherited_from: str | None = None


GET_FIELDS = "name,property,value,source"


def parse_zfs_get(text: str) -> dict[str, dict[str, PropertyValue]]:
    """`zfs get -Hp -o name,property,value,source`: properties by dataset.

    Split on tabs only: the source `inherited from tank/pg` holds spaces.
    """
    found: dict[str, dict[str, PropertyValue]] = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 4:
            name, prop, value, source = fields
            found.setdefault(name, {})[prop] = property_value(value, source)
    return found


def property_value(value: str, source: str) -> PropertyValue:
    inherited = source.startswith("inherited from ")
    return PropertyValue(
        value=None if value == "-" else value,
        source="inherited" if inherited else source,
        inherited_from=source.removeprefix("inherited from ") if inherited else None,
    )


def parse_ratio(value: str | None) -> float | None:
    """compressratio: `3.96` with -p on OpenZFS, `3.96x` even with -p on zfs-fuse."""
    if not value:
        return None
    try:
        return float(value.rstrip("x"))
    except ValueError:
        return None
