"""Sizes as PostgreSQL and ZFS read and write them (both 1024-based).

The one home for size units, parsing and formatting: the fleet and benchmark
pages format bytes with `format_human_size`, the advisor with `format_gib`.
"""

from __future__ import annotations

import re

KiB, MiB, GiB, TiB = 1024, 1024**2, 1024**3, 1024**4
SIZE_UNITS = {"B": 1, "kB": KiB, "MB": MiB, "GB": GiB, "TB": TiB}
_PG_SIZE = re.compile(r"\s*(\d+)\s*(B|kB|MB|GB|TB)?\s*\Z")
_PG_UNIT = re.compile(r"(\d*)(B|kB|MB|GB|TB)\Z")
_ZFS_SIZE = re.compile(r"\s*(\d+)\s*([KMGT]?)B?\s*\Z", re.IGNORECASE)
_ZFS_SUFFIXES = (("T", TiB), ("G", GiB), ("M", MiB), ("K", KiB))


def format_pg_size(size: int) -> str:
    """PGTune's output: "NGB" when a whole number of GiB, "NMB" of MiB, else "NkB"."""
    if size and size % GiB == 0:
        return f"{size // GiB}GB"
    if size and size % MiB == 0:
        return f"{size // MiB}MB"
    return f"{size // KiB}kB"


def unit_bytes(unit: str | None) -> int | None:
    """Bytes in one pg_settings unit ("8kB" -> 8192); None for non-memory units."""
    match = _PG_UNIT.match(unit or "")
    return int(match[1] or 1) * SIZE_UNITS[match[2]] if match else None


def pg_size_in_unit(text: str, unit: str | None) -> int:
    """Bytes of a PostgreSQL memory value; a bare number counts in the setting's unit."""
    match = _PG_SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a PostgreSQL memory size")
    if match[2]:
        return int(match[1]) * SIZE_UNITS[match[2]]
    return int(match[1]) * (unit_bytes(unit) or 1)


def parse_zfs_size(text: str) -> int | None:
    """Bytes of "16K", "1M" or "16384" (ZFS sizes are 1024-based); None if not a size."""
    match = _ZFS_SIZE.match(text or "")
    if not match:
        return None
    power = {"": 1, "K": KiB, "M": MiB, "G": GiB, "T": TiB}[match[2].upper()]
    return int(match[1]) * power


def format_zfs_size(size: int) -> str:
    """"16K" for 16384: the form `zfs get` prints without -p."""
    for suffix, power in _ZFS_SUFFIXES:
        if size and size % power == 0:
            return f"{size // power}{suffix}"
    return str(size)


_HUMAN_UNITS = ("", "K", "M", "G", "T", "P")


def format_human_size(value: float) -> str:
    """Bytes the way zfs prints them for people (128K, 1.5G): what operators read daily."""
    size = float(value)
    for unit in _HUMAN_UNITS:
        if size < KiB or unit == _HUMAN_UNITS[-1]:
            return f"{size:.0f}{unit}" if size == int(size) else f"{size:.1f}{unit}"
        size /= KiB
    return str(value)  # unreachable: the last unit always returns


def format_gib(size: int | None) -> str:
    """"12.5 GiB" for evidence lines; sizes people compare at a glance."""
    if size is None:
        return "unknown"
    return f"{size / GiB:.1f} GiB"
