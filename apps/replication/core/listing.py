"""What each side of a link looks like, read in one command per host.

Source: for each source dataset, `zfs get -Hp -r` of guid, creation,
createtxg (hidden on zfs-fuse but answered), userrefs, used, referenced and
mountpoint (its source tells whether the mountpoint is set locally, which
decides whether -p may be sent), `encryption` and `keystatus` where the host has
native encryption (they decide -w: streams.py), and the helper tools found
(`command -v pv mbuffer`).

Target: the same per target dataset, plus `written`, `receive_resume_token`,
`encryption` and `encryptionroot` where the host has them (zfs-fuse refuses a
`zfs get` naming a property it does not know, so they are asked for by
capability; one it was not asked for reads as absent, and an absent
`encryption` as not encrypted),
whether a `zfs recv` into it is running (ps: another run, a hand-typed
receive), and every filesystem's origin, since a clone of a received snapshot
may live anywhere in the pool and zfs-fuse has no `clones` property.

A dataset that does not exist prints a `pozol-missing` line instead, so a
first run is a listing like any other (asked only when its `zfs get` failed: one
zfs command per dataset, not two, on every run; a `zfs get` that failed on a
dataset that exists fails the listing, its message on stderr). Lines start with
the dataset's name or a `pozol-` marker; ZFS names never start with `pozol-`
followed by a tab.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from apps.remote.commands import Command, dataset_name, script
from apps.replication.core.capabilities import ReplicationCapabilities
from apps.replication.core.planner import Snap, SourceState, TargetState
from apps.replication.core.streams import Encryption

BASE_PROPERTIES = ("guid", "creation", "createtxg", "userrefs", "used", "referenced",
                   "mountpoint")
TOOLS = ("pv", "mbuffer")

_SOURCE = """\
for d in {datasets}; do
  zfs get -Hp -r -o name,property,value,source {properties} "$d" 2>/dev/null || {{
    zfs list -H -o name "$d" >/dev/null 2>&1 && {{
      zfs get -Hp -r -o name,property,value,source {properties} "$d" >/dev/null; exit 1; }}
    printf 'pozol-missing\\t%s\\n' "$d"; }}
done
for t in {tools}; do command -v "$t" >/dev/null 2>&1 && printf 'pozol-tool\\t%s\\n' "$t"; done
exit 0
"""

_TARGET = """\
for d in {datasets}; do
  zfs get -Hp -r -o name,property,value,source {properties} "$d" 2>/dev/null || {{
    zfs list -H -o name "$d" >/dev/null 2>&1 && {{
      zfs get -Hp -r -o name,property,value,source {properties} "$d" >/dev/null; exit 1; }}
    printf 'pozol-missing\\t%s\\n' "$d"; }}
  ps -eo args= | awk -v d="$d" '$1 == "zfs" && ($2 == "recv" || $2 == "receive") \
&& $NF == d {{ f = 1 }} END {{ exit !f }}' && printf 'pozol-busy\\t%s\\n' "$d"
done
zfs list -H -t filesystem,volume -o name,origin | awk -F '\\t' '$2 != "-" \
{{ printf "pozol-origin\\t%s\\t%s\\n", $1, $2 }}'
exit 0
"""


@dataclass(frozen=True)
class SideListing:
    """One side's datasets (keyed by dataset name) and, on the source, its tools."""

    sources: dict[str, SourceState] = field(default_factory=dict)
    targets: dict[str, TargetState] = field(default_factory=dict)
    tools: tuple[str, ...] = ()


def source_properties(caps: ReplicationCapabilities) -> tuple[str, ...]:
    return BASE_PROPERTIES + (("encryption", "keystatus") if caps.raw_stream else ())


def source_command(datasets: Iterable[str], caps: ReplicationCapabilities) -> Command:
    names = [dataset_name(d) for d in datasets]
    return script(_SOURCE, datasets=names, properties=",".join(source_properties(caps)),
                  tools=list(TOOLS), shown=f"list snapshots of {', '.join(names)} for "
                                           "replication")


def target_properties(caps: ReplicationCapabilities) -> tuple[str, ...]:
    extra = (("written",) if caps.written_property else ()) + (
        ("receive_resume_token",) if caps.resumable else ()) + (
        ("encryption", "encryptionroot") if caps.raw_stream else ())
    return BASE_PROPERTIES + extra


def target_command(datasets: Iterable[str], caps: ReplicationCapabilities) -> Command:
    names = [dataset_name(d) for d in datasets]
    return script(_TARGET, datasets=names, properties=",".join(target_properties(caps)),
                  shown=f"list {', '.join(names)} on the target for replication")


def parse_source(text: str, datasets: Iterable[str]) -> SideListing:
    """The source datasets' snapshots; a missing source dataset has none."""
    rows, _, tools, _, _ = _parse(text)
    states = {}
    for dataset in datasets:
        props = rows.get(dataset, {})
        local = frozenset(name for name, (_, source) in props.items() if source == "local")
        states[dataset] = SourceState(_snaps(rows, dataset, {}), local, _encryption(props))
    return SideListing(sources=states, tools=tuple(tools))


def parse_target(text: str, datasets: Iterable[str]) -> SideListing:
    rows, missing, _, busy, origins = _parse(text)
    clones: dict[str, list[str]] = {}
    for clone, origin in origins:
        clones.setdefault(origin, []).append(clone)
    states = {}
    for dataset in datasets:
        if dataset in missing or dataset not in rows:
            states[dataset] = TargetState(exists=False, busy=dataset in busy)
            continue
        props = rows[dataset]
        token = props.get("receive_resume_token", ("-", ""))[0]
        states[dataset] = TargetState(
            exists=True, snapshots=_snaps(rows, dataset, clones),
            written=_int(props.get("written", ("", ""))[0]),
            resume_token=None if token in ("-", "") else token, busy=dataset in busy,
            encryption=props.get("encryption", (None, ""))[0],
            encryption_root=props.get("encryptionroot", (None, ""))[0])
    return SideListing(targets=states)


def _encryption(props: dict[str, tuple[str, str]]) -> Encryption | None:
    """None where `encryption` was not listed (not asked of a ZFS without it)."""
    if "encryption" not in props:
        return None
    keystatus = props.get("keystatus", ("", ""))[0]
    return Encryption(props["encryption"][0], "" if keystatus == "-" else keystatus)


def _parse(text: str):
    rows: dict[str, dict[str, tuple[str, str]]] = {}
    missing, tools, busy, origins = set(), [], set(), []
    for line in text.splitlines():
        fields = line.split("\t")
        if fields[0] == "pozol-missing" and len(fields) == 2:
            missing.add(fields[1])
        elif fields[0] == "pozol-tool" and len(fields) == 2:
            tools.append(fields[1])
        elif fields[0] == "pozol-busy" and len(fields) == 2:
            busy.add(fields[1])
        elif fields[0] == "pozol-origin" and len(fields) == 3:
            origins.append((fields[1], fields[2]))
        elif len(fields) == 4:
            name, prop, value, source = fields
            rows.setdefault(name, {})[prop] = (value, source)
    return rows, missing, tools, busy, origins


def _snaps(rows: dict[str, dict[str, tuple[str, str]]], dataset: str,
           clones: dict[str, list[str]]) -> tuple[Snap, ...]:
    found = []
    for name, props in rows.items():
        owner, at, label = name.partition("@")
        if owner != dataset or not at:
            continue
        guid, creation = _int(props.get("guid", ("", ""))[0]), _int(
            props.get("creation", ("", ""))[0])
        if guid is None or creation is None:
            continue
        found.append(Snap(name=label, guid=guid, created=datetime.fromtimestamp(creation, UTC),
                          createtxg=_int(props.get("createtxg", ("", ""))[0]),
                          userrefs=_int(props.get("userrefs", ("", ""))[0]) or 0,
                          clones=tuple(sorted(clones.get(name, ()))),
                          used=_int(props.get("used", ("", ""))[0]),
                          referenced=_int(props.get("referenced", ("", ""))[0])))
    return tuple(found)


def _int(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None
