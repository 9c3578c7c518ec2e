"""Operating system facts: os-release, uname, nproc, /proc/meminfo, vm sysctls."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

# The sysctls a tuning plan reads; `sysctl NAME...` prints them as `name = value`.
VM_SYSCTLS = (
    "vm.dirty_bytes",
    "vm.dirty_background_bytes",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.overcommit_memory",
    "vm.overcommit_ratio",
    "vm.swappiness",
    "vm.nr_hugepages",
)

# Transparent huge pages: `enabled` and `defrag` list every mode, the one in force
# bracketed: "always [madvise] never" (Documentation/admin-guide/mm/transhuge.rst).
THP_DIR = "/sys/kernel/mm/transparent_hugepage"
_BRACKETED = re.compile(r"\[([a-z+_-]+)\]")
_MEMINFO_LINE = re.compile(r"(?P<key>[A-Za-z0-9_()]+):\s+(?P<value>\d+)(?:\s+(?P<unit>kB))?\s*\Z")
_UNIT_FACTOR = {None: 1, "kB": 1024}  # meminfo "kB" is KiB (proc.rst)


@dataclass(frozen=True)
class OsRelease:
    id: str
    version_id: str
    pretty_name: str


def parse_os_release(text: str) -> OsRelease:
    """/etc/os-release: shell-style KEY=value lines, values possibly quoted."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, raw = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            values[key.strip()] = _unquote(raw.strip())
    return OsRelease(
        id=values.get("ID", "linux"),
        version_id=values.get("VERSION_ID", ""),
        pretty_name=values.get("PRETTY_NAME", values.get("NAME", "Linux")),
    )


def _unquote(raw: str) -> str:
    try:
        parts = shlex.split(raw)
    except ValueError:  # an unbalanced quote: keep what is there
        return raw.strip("\"'")
    return " ".join(parts)


def parse_single_line(text: str) -> str:
    """`uname -r`, `uname -m`: the first non-empty line."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def parse_int(text: str) -> int | None:
    """`nproc`, `sysctl -n NAME`, a sysfs number."""
    value = parse_single_line(text)
    return int(value) if re.fullmatch(r"-?\d+", value) else None


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo in bytes (counts such as HugePages_Total stay counts)."""
    info: dict[str, int] = {}
    for line in text.splitlines():
        match = _MEMINFO_LINE.match(line.strip())
        if match:
            info[match["key"]] = int(match["value"]) * _UNIT_FACTOR[match["unit"]]
    return info


def parse_sysctls(text: str) -> dict[str, int | str]:
    """`sysctl a b c` output: `name = value` lines; errors for unknown keys are skipped."""
    values: dict[str, int | str] = {}
    for line in text.splitlines():
        name, sep, raw = line.partition(" = ")
        if sep and re.fullmatch(r"[a-z0-9_.-]+", name.strip()):
            values[name.strip()] = _number_or_text(raw.strip())
    return values


def _number_or_text(raw: str) -> int | str:
    return int(raw) if re.fullmatch(r"-?\d+", raw) else raw


def parse_tools(text: str) -> dict[str, str]:
    """`command -v a b c` output: the path of each tool found, by name."""
    return {line.rsplit("/", 1)[-1]: line for line in text.split() if line.startswith("/")}


def parse_bracketed(text: str) -> str | None:
    """The mode in force in a sysfs choice list ("always [madvise] never" -> "madvise")."""
    match = _BRACKETED.search(text)
    return match[1] if match else None
