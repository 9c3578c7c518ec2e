"""ARC statistics and ZFS module parameters.

OpenZFS on Linux prints all arcstats in one kstat file
(/proc/spl/kstat/zfs/arcstats: two header lines, then `name type value`);
zfs-fuse keeps one file per field under /zfs-kstat/zfs/arcstats/, read here as
the `path:value` lines of `grep -r . DIR`. Fields are looked up by name only:
their order and number change between releases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PROC_ARCSTATS = "/proc/spl/kstat/zfs/arcstats"
FUSE_ARCSTATS_DIR = "/zfs-kstat/zfs/arcstats/"
MODULE_PARAMS_DIR = "/sys/module/zfs/parameters/"
_SIGNED = re.compile(r"-?\d+\Z")


def parse_arcstats_proc(text: str) -> dict[str, int]:
    """The SPL kstat file; values are signed (memory_available_bytes can be negative)."""
    stats = {}
    for line in text.splitlines()[2:]:
        fields = line.split()
        if len(fields) == 3 and _SIGNED.match(fields[2]):
            stats[fields[0]] = int(fields[2])
    return stats


def parse_grep_tree(text: str, directory: str) -> dict[str, str]:
    """`grep -r . DIR` output: file name (relative to DIR) -> first line of content."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith(directory):
            continue  # grep's own complaints (permission denied) are not values
        name, sep, value = line[len(directory):].partition(":")
        if sep and "/" not in name:
            values.setdefault(name, value)
    return values


def parse_arcstats_files(text: str, directory: str = FUSE_ARCSTATS_DIR) -> dict[str, int]:
    tree = parse_grep_tree(text, directory)
    return {name: int(value) for name, value in tree.items() if _SIGNED.match(value.strip())}


def parse_module_params(text: str, directory: str = MODULE_PARAMS_DIR) -> dict[str, str]:
    return {name: value.strip() for name, value in parse_grep_tree(text, directory).items()}


@dataclass(frozen=True)
class ArcSummary:
    size: int | None
    c: int | None
    c_min: int | None
    c_max: int | None
    hits: int | None
    iohits: int | None  # OpenZFS 2.2+ only
    misses: int | None
    hit_ratio: float | None  # since the counters were last reset (boot)
    ratio_formula: str
    raw: dict[str, int] = field(default_factory=dict, repr=False)


def summarize_arc(stats: dict[str, int]) -> ArcSummary:
    ratio, formula = hit_ratio(stats)
    return ArcSummary(
        size=stats.get("size"),
        c=stats.get("c"),
        c_min=stats.get("c_min"),
        c_max=stats.get("c_max"),
        hits=stats.get("hits"),
        iohits=stats.get("iohits"),
        misses=stats.get("misses"),
        hit_ratio=ratio,
        ratio_formula=formula,
        raw=dict(stats),
    )


def hit_ratio(stats: dict[str, int]) -> tuple[float | None, str]:
    """Chosen by the keys present, not by version: 2.2 moved waits on in-flight
    reads out of `hits` into `iohits`, so they must join the denominator."""
    if "hits" not in stats or "misses" not in stats:
        return None, "unavailable"
    keys = ("hits", "iohits", "misses") if "iohits" in stats else ("hits", "misses")
    total = sum(stats[key] for key in keys)
    formula = "hits/(" + "+".join(keys) + ")"
    return (round(stats["hits"] / total, 4) if total else None), formula
