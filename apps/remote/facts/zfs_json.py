"""OpenZFS 2.3+ JSON output (`-j`): the same facts as the -Hp parsers, from JSON.

Values are strings unless `--json-int` was given, so each value is accepted as
either. Schema: man pages zfs-set.8, zfs-list.8, zpool-list.8 at zfs-2.3.0.
"""

from __future__ import annotations

import json

from apps.remote.facts.zfs import PropertyValue, ZfsVersion, parse_size, property_value
from apps.remote.facts.zpool import PoolRow, parse_percent

_SOURCE_WORDS = {"NONE": "-", "DEFAULT": "default", "LOCAL": "local",
                 "TEMPORARY": "temporary", "RECEIVED": "received"}


def parse_zfs_version_json(text: str) -> ZfsVersion:
    """`zfs version -j`: {"zfs_version": {"userland": "zfs-2.3.0-1", "kernel": "zfs-kmod-..."}}."""
    versions = _load(text).get("zfs_version") or {}
    userland, kernel = versions.get("userland"), versions.get("kernel")
    return ZfsVersion(
        userland.removeprefix("zfs-") if isinstance(userland, str) else None,
        kernel.removeprefix("zfs-kmod-") if isinstance(kernel, str) else None,
    )


def parse_zfs_get_json(text: str) -> dict[str, dict[str, PropertyValue]]:
    """`zfs get -j [--json-int] PROPS DATASETS`: properties by dataset."""
    found: dict[str, dict[str, PropertyValue]] = {}
    for name, dataset in (_load(text).get("datasets") or {}).items():
        props = dataset.get("properties") or {} if isinstance(dataset, dict) else {}
        found[name] = {prop: _json_property(entry) for prop, entry in props.items()
                       if isinstance(entry, dict)}
    return found


def _json_property(entry: dict) -> PropertyValue:
    source = entry.get("source") or {}
    kind, data = source.get("type", "NONE"), source.get("data", "-")
    word = f"inherited from {data}" if kind == "INHERITED" else _SOURCE_WORDS.get(kind, "-")
    return property_value(str(entry.get("value", "-")), word)


def parse_zpool_list_json(text: str) -> list[PoolRow]:
    """`zpool list -j [--json-int]`: one PoolRow per pool."""
    rows = []
    for name, pool in (_load(text).get("pools") or {}).items():
        props = {key: str((value or {}).get("value", "-"))
                 for key, value in (pool.get("properties") or {}).items()}
        rows.append(_json_pool(name, pool.get("state"), props))
    return rows


def _json_pool(name: str, state: str | None, props: dict[str, str]) -> PoolRow:
    sizes = {key: parse_size(props.get(key, "-")) for key in ("size", "allocated", "free")}
    return PoolRow(
        name=name,
        size=sizes["size"][0],
        allocated=sizes["allocated"][0],
        free=sizes["free"][0],
        fragmentation=parse_percent(props.get("fragmentation", "-")),
        capacity=parse_percent(props.get("capacity", "-")),
        health=props.get("health") or state or "UNKNOWN",
        exact=all(exact for _, exact in sizes.values()),
    )


def _load(text: str) -> dict:
    try:
        document = json.loads(text)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}
