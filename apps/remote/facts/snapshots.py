"""Every snapshot of a host from one `zfs get`, on both ZFS dialects.

`zfs list -t snapshot -p` is what OpenZFS would offer, but zfs-fuse has no
`-p` on `list` and no `-t` on `get`, and knows no `clones` property. One
command answers on both: `zfs get -Hp` with no dataset named lists every
filesystem, volume and snapshot of the host (OpenZFS: bookmarks too, which
are skipped) with exact numbers. The clones of a snapshot are read from the
other side, the `origin` of each filesystem, which both dialects have.

Whether PoZoL made a snapshot is what ZFS says, not its name: the user
property `pozol:owner`. Its source tells a received snapshot: `zfs send -p`
(or -R) carries user properties, and the target reports them as `received`.
A snapshot received without properties carries nothing to tell it apart and
reads as made by hand.

Who holds a snapshot is a second command, `zfs holds -H`, asked only for the
snapshots whose `userrefs` is above 0 and only where the host's ZFS lists holds
(OpenZFS; zfs-fuse refuses `zfs holds` and keeps the count alone).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from apps.remote.facts.numbers import is_digits

USER_PROPERTIES = ("pozol:owner", "pozol:policy", "pozol:label", "pozol:taken")
LISTING_PROPERTIES = ("creation", "used", "referenced", "userrefs", "origin", *USER_PROPERTIES)
LISTING_FIELDS = "name,property,value,source"

POZOL = "pozol"
HAND = "hand"
RECEIVED = "received"


@dataclass(frozen=True)
class SnapshotRow:
    dataset: str
    name: str  # the part after '@'
    creation: int | None  # epoch seconds
    used: int | None
    referenced: int | None
    userrefs: int  # holds; `zfs holds` fails on zfs-fuse, the count does not
    clones: tuple[str, ...] = ()
    holds: tuple[str, ...] = ()  # their tags, where `zfs holds` lists them
    properties: dict[str, str] = field(default_factory=dict)  # pozol:* that are set
    received: bool = False  # a pozol:* property came with `zfs recv`

    @property
    def full_name(self) -> str:
        return f"{self.dataset}@{self.name}"

    @property
    def origin(self) -> str:
        if self.received:
            return RECEIVED
        return POZOL if "pozol:owner" in self.properties else HAND


def parse_listing(text: str) -> list[SnapshotRow]:
    """`zfs get -Hp -o name,property,value,source <LISTING_PROPERTIES>` of the whole host."""
    values: dict[str, dict[str, str]] = {}
    received: set[str] = set()
    clones: dict[str, list[str]] = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) != 4:
            continue
        name, prop, value, source = fields
        if prop == "origin":
            if value != "-" and "@" not in name:
                clones.setdefault(value, []).append(name)
            continue
        if "@" not in name:
            continue
        props = values.setdefault(name, {})
        if prop in USER_PROPERTIES and source not in ("local", "received"):
            continue  # inherited from the dataset: says nothing about this snapshot
        if value != "-":
            props[prop] = value
            if source == "received" and prop in USER_PROPERTIES:
                received.add(name)
    return [_row(name, props, clones.get(name, ()), name in received)
            for name, props in values.items()]


def _row(full_name: str, props: dict[str, str], clones, received: bool) -> SnapshotRow:
    dataset, _, name = full_name.partition("@")
    return SnapshotRow(
        dataset=dataset, name=name, creation=_int(props.get("creation")),
        used=_int(props.get("used")), referenced=_int(props.get("referenced")),
        userrefs=_int(props.get("userrefs")) or 0, clones=tuple(sorted(clones)),
        properties={p: props[p] for p in USER_PROPERTIES if p in props},
        received=received,
    )


def parse_holds(text: str) -> dict[str, tuple[str, ...]]:
    """`zfs holds -H SNAPSHOT...`: `name<TAB>tag<TAB>timestamp` per hold.

    A tag is any text its maker chose, tabs and spaces included; a snapshot name has
    no tab and the timestamp (`Fri Nov 27 08:34 2026`) none either, so the tag is
    whatever lies between the first tab and the last.
    """
    holds: dict[str, list[str]] = {}
    for line in text.splitlines():
        name, sep, rest = line.partition("\t")
        tag, sep2, _timestamp = rest.rpartition("\t")
        if sep and sep2 and "@" in name and tag:
            holds.setdefault(name, []).append(tag)
    return {name: tuple(sorted(tags)) for name, tags in holds.items()}


def with_holds(rows: list[SnapshotRow], holds: dict[str, tuple[str, ...]]) -> list[SnapshotRow]:
    return [replace(row, holds=holds[row.full_name]) if row.full_name in holds else row
            for row in rows]


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and is_digits(text) else None


def is_busy(stderr: str) -> bool:
    """zfs's refusal to destroy a held snapshot (or one in use)."""
    return "dataset is busy" in stderr


def already_exists(stderr: str) -> bool:
    return "dataset already exists" in stderr
