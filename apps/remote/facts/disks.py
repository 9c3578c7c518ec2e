"""Block devices and their write caches: lsblk, nvme-cli, /sys/block/*/queue/write_cache."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from apps.remote.facts.numbers import is_digits

LSBLK_COLUMNS = "NAME,TYPE,SIZE,ROTA,MODEL,TRAN"
WRITE_CACHE_GLOB = "/sys/block/*/queue/write_cache"
_VWC = re.compile(r"Volatile Write Cache.*value:\s*(?:0x)?(?P<value>[0-9a-fA-F]+)")
_WRITE_CACHE_LINE = re.compile(r"/sys/block/(?P<disk>[^/]+)/queue/write_cache:(?P<mode>.*)\Z")


@dataclass(frozen=True)
class BlockDevice:
    name: str
    type: str  # disk, part, loop, rom, ...
    size: int | None  # bytes (lsblk -b)
    rotational: bool | None
    model: str | None
    transport: str | None  # nvme, sata, usb, ...
    parent: str | None = None  # the disk a partition belongs to


def parse_lsblk_json(text: str) -> list[BlockDevice]:
    """`lsblk -J -b -o NAME,TYPE,SIZE,ROTA,MODEL,TRAN`, flattened parent-first.

    Older util-linux prints every value as a string ("1", "0"); newer prints
    numbers and booleans: both are accepted.
    """
    try:
        roots = json.loads(text).get("blockdevices", [])
    except (ValueError, AttributeError):
        return []
    return list(_flatten(roots, None))


def _flatten(nodes: list[dict], parent: str | None):
    for node in nodes:
        if not isinstance(node, dict) or not node.get("name"):
            continue
        yield _device(node, parent)
        yield from _flatten(node.get("children") or [], node["name"])


def _device(node: dict, parent: str | None) -> BlockDevice:
    return BlockDevice(
        name=str(node["name"]),
        type=str(node.get("type") or ""),
        size=_to_int(node.get("size")),
        rotational=_to_bool(node.get("rota")),
        model=(str(node["model"]).strip() or None) if node.get("model") else None,
        transport=str(node["tran"]) if node.get("tran") else None,
        parent=parent,
    )


def parse_lsblk_pairs(text: str) -> list[BlockDevice]:
    """`lsblk -P -b -o ...`: KEY="value" pairs, one device per line (no tree)."""
    devices = []
    for line in text.splitlines():
        pairs = dict(item.split("=", 1) for item in shlex.split(line) if "=" in item)
        if pairs.get("NAME"):
            devices.append(_device({key.lower(): value for key, value in pairs.items()}, None))
    return devices


def _to_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and is_digits(value) else None


def _to_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    return {"1": True, "0": False}.get(str(value))


def parse_nvme_vwc(stdout: str, exit_code: int) -> bool | None:
    """`nvme get-feature -f 6`: True/False, or None when the controller has no VWC.

    printf's `%#x` drops the `0x` for zero, so "disabled" reads `00000000`; a
    controller without a volatile cache fails with no output at all.
    """
    match = _VWC.search(stdout)
    if exit_code != 0 or not match:
        return None
    return bool(int(match["value"], 16) & 1)


def parse_write_cache(text: str) -> dict[str, str]:
    """`grep -H . /sys/block/*/queue/write_cache`: "write back" or "write through" by disk."""
    modes = {}
    for line in text.splitlines():
        match = _WRITE_CACHE_LINE.match(line.strip())
        if match:
            modes[match["disk"]] = match["mode"].strip()
    return modes
