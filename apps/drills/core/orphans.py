"""Orphan clones: clone datasets and postmasters on a host that the database does not
know, found and removed; the decisions are pure.

Every clone dataset carries `pozol:clone=<name>` and `pozol:owner=<this control
plane's INSTANCE>` (apps.clones.core.commands.create). One command lists, in one
round trip, every filesystem's name, pozol:clone, pozol:owner, creation and
mountpoint, and every running postmaster with its age and data directory. A name
is an orphan when no live clone or running drill has it, it is older than the
grace period (an operation may be making it right now, not yet recorded) and no
operation is running for it. A dataset whose pozol:owner names another control
plane is never touched; one without pozol:owner (made before owners were written)
counts as ours. A postmaster is an orphan's when its data directory is below an
orphan's mountpoint.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from apps.clones.core.layout import CLONES_PARENT
from apps.remote.commands import Command, dataset_name, integer, script

# zfs-fuse's `zfs get` has no -t: the clone parents are found with `zfs list` first.
LIST = script(
    "for r in $(zfs list -H -o name | grep -E '^[^/]+/{parent}$'); do "
    "zfs get -r -H -p -o name,property,value pozol:clone,pozol:owner,creation,mountpoint "
    "\"$r\"; done; echo '--postmasters--'; "
    "ps -eo pid=,etimes=,args= | awk '$3 ~ /\\/postgres$/ {{print}}' || true",
    parent=CLONES_PARENT,
    shown="list clone datasets (pozol:clone, pozol:owner) and running postmasters")

# Immediate shutdown of the postmasters (SIGQUIT), then the datasets; zfs-fuse keeps a
# mount busy a moment after the last process leaves it.
_REMOVE = """\
for pid in {pids}; do kill -QUIT "$pid" 2>/dev/null || true; done
for pid in {pids}; do
  i=0; while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1)); [ "$i" -ge 200 ] && kill -KILL "$pid" 2>/dev/null; sleep 0.05; done
done
if zfs list {root} > /dev/null 2>&1; then
  i=0
  until zfs destroy -r {root}; do
    i=$((i + 1)); [ "$i" -ge 40 ] && exit 1; sleep 0.25
  done
fi
"""


@dataclass(frozen=True)
class Postmaster:
    pid: int
    age_seconds: int
    data_dir: str


@dataclass
class Found:
    """A clone name on the host: its datasets, their mountpoints and postmasters."""

    name: str
    root: str
    datasets: list[str] = field(default_factory=list)
    mountpoints: list[str] = field(default_factory=list)
    created: int | None = None  # epoch seconds of the oldest dataset
    owner: str = ""
    postmasters: list[Postmaster] = field(default_factory=list)


def parse(stdout: str) -> list[Found]:
    """The LIST command's output as one Found per clone name."""
    datasets_part, _, postmaster_part = stdout.partition("--postmasters--")
    props: dict[str, dict[str, str]] = {}
    for line in datasets_part.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and "@" not in parts[0]:
            props.setdefault(parts[0], {})[parts[1]] = parts[2]
    found: dict[str, Found] = {}
    for dataset, values in props.items():
        name = values.get("pozol:clone", "-")
        root = _root_of(dataset)
        if name in ("-", "") or root is None or root.rsplit("/", 1)[-1] != name:
            continue
        entry = found.setdefault(name, Found(name=name, root=root))
        entry.datasets.append(dataset)
        if values.get("mountpoint", "-") not in ("-", "none", "legacy"):
            entry.mountpoints.append(values["mountpoint"])
        created = _int(values.get("creation"))
        if created is not None:
            entry.created = created if entry.created is None else min(entry.created, created)
        if values.get("pozol:owner", "-") != "-":
            entry.owner = values["pozol:owner"]
    for postmaster in _postmasters(postmaster_part):
        for entry in found.values():
            if any(_below(postmaster.data_dir, m) for m in entry.mountpoints):
                entry.postmasters.append(postmaster)
    return sorted(found.values(), key=lambda f: f.name)


def orphans(found: Iterable[Found], *, known: set[str], busy: set[str], instance: str,
            now: float, grace_seconds: float) -> tuple[list[Found], list[tuple[Found, str]]]:
    """(the orphans to remove, [(an orphan left alone, why)])."""
    remove, kept = [], []
    for entry in found:
        if entry.name in known:
            continue
        if entry.owner and entry.owner != instance:
            continue  # another control plane's
        if entry.name in busy:
            kept.append((entry, "an operation is running for it"))
        elif entry.created is None or now - entry.created < grace_seconds:
            kept.append((entry, "younger than the grace period"))
        else:
            remove.append(entry)
    return remove, kept


def remove(entry: Found) -> Command:
    root = dataset_name(entry.root)
    pids = [str(integer(p.pid, minimum=2)) for p in entry.postmasters] or [""]
    return script(_REMOVE, pids=[p for p in pids if p], root=root,
                  shown=f"stop the orphan clone {entry.name}'s PostgreSQL and destroy "
                        f"{entry.root}")


def _root_of(dataset: str) -> str | None:
    parts = dataset.split("/")
    if len(parts) >= 3 and parts[1] == CLONES_PARENT:
        return "/".join(parts[:3])
    return None


def _postmasters(text: str) -> list[Postmaster]:
    found = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3 or "-D" not in parts:
            continue
        at = parts.index("-D")
        pid, age = _int(parts[0]), _int(parts[1])
        if pid is None or age is None or at + 1 >= len(parts):
            continue
        found.append(Postmaster(pid=pid, age_seconds=age, data_dir=parts[at + 1]))
    return found


def _below(path: str, mountpoint: str) -> bool:
    return path == mountpoint or path.startswith(mountpoint.rstrip("/") + "/")


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
