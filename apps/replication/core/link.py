"""A replication link's parameters, validated before any command is built.

A link copies one source (a single dataset, or a PostgreSQL cluster's data and
WAL datasets, which PoZoL keeps under one parent so `zfs snapshot -r` is
atomic) on one host to a target parent dataset on another host.

Target names: the source root keeps its last component under the target
parent, and each source keeps its path below the root, so two links into one
target parent do not collide and a cluster arrives as a cluster:

    tank/db                         -> backup/host1/db
    tank/pg/main/{data,wal}         -> backup/host1/main/{data,wal}
      (root tank/pg/main: the longest common parent of the sources)

A cluster's WAL archive (apps/wal: `<pool>/pozol_wal/<leaf>`, outside the cluster's
parent) travels on the cluster's link as one more dataset, `archive`, which keeps its
leaf under `<target parent>/pozol_wal/`, as on the source:

    tank/pozol_wal/pg:main:data     -> backup/host1/pozol_wal/pg:main:data

It is not a source: the link's sources are fixed at creation, and archiving may be
turned on or off later; each run names the archive it carries.

Every bad value raises `ReplicationError` (a ValueError) naming the field, so a
form or serializer can attach the message where it belongs. Dataset names go
through the project's one validator (apps.remote.commands.dataset_name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from apps.common.numbers import is_whole
from apps.remote.commands import InvalidValue, dataset_name

MAX_SOURCES = 8
# pv and mbuffer accept any rate, but under 64 KiB/s a 1 GB cluster takes more
# than four hours per full send and over 100 GiB/s no link exists: a typo.
MIN_BANDWIDTH = 64 * 1024
MAX_BANDWIDTH = 100 * 1024**3
LINK_NAME_MAX = 48
# The carried archive's parent on the target (apps/wal's on the source) and its snapshots.
ARCHIVES = "pozol_wal"
ARCHIVE_PREFIX = "pozol-carry-"
_LINK_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")


class ReplicationError(ValueError):
    """A link or an input a person must correct; `field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Mode(StrEnum):
    INTERMEDIATES = "-I"  # every snapshot between common and newest arrives (default)
    NEWEST_ONLY = "-i"  # only the newest; intermediates are skipped on the target


@dataclass(frozen=True)
class Link:
    """`name` is the link's stable identity (a slug): hold tags and key comments use it."""

    name: str
    sources: tuple[str, ...]
    target_parent: str
    mode: Mode = Mode.INTERMEDIATES
    rollback_opt_in: bool = False  # the operator allowed rolling a diverged target back
    bandwidth_limit: int | None = None  # bytes per second; None: unlimited
    # zfs send -c / -L where both ends take them; False: the operator opted out (streams.py)
    compressed_streams: bool = True
    large_block_streams: bool = True
    large_blocks_sent: bool | None = None  # the -L of the link's first send; None: none yet
    archive: str | None = None  # the source cluster's WAL archive carried along; None: none

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", _sources(self.sources))
        object.__setattr__(self, "name", _link_name(self.name))
        object.__setattr__(self, "target_parent", _dataset("target_parent", self.target_parent))
        try:
            object.__setattr__(self, "mode", Mode(self.mode))
        except ValueError:
            raise ReplicationError(
                "mode", f"The mode must be -I or -i, not {self.mode!r}.") from None
        for flag in ("rollback_opt_in", "compressed_streams", "large_block_streams"):
            if not isinstance(getattr(self, flag), bool):
                raise ReplicationError(flag, f"{flag} is true or false.")
        if self.large_blocks_sent is not None and not isinstance(self.large_blocks_sent, bool):
            raise ReplicationError("large_blocks_sent", "large_blocks_sent is true, false "
                                                        "or unknown (null).")
        _bandwidth(self.bandwidth_limit)
        if self.archive is not None:
            object.__setattr__(self, "archive", _dataset("archive", self.archive))
            if self.archive in self.sources or any(
                    self.archive.startswith(s + "/") or s.startswith(self.archive + "/")
                    for s in self.sources):
                raise ReplicationError("archive", f"{self.archive} is the link's own source "
                                                  "or beside it: a WAL archive lives apart.")

    @property
    def root(self) -> str:
        """The source root: the dataset itself, or the common parent of a cluster's."""
        if len(self.sources) == 1:
            return self.sources[0]
        return "/".join(_common(self.sources))  # one pool: never empty

    def target_of(self, source: str) -> str:
        if source not in self.sources:
            raise ReplicationError("sources", f"{source} is not a source of link {self.name}.")
        root = self.root
        below = source[len(root):]  # "" or "/data"
        return f"{self.target_parent}/{root.rsplit('/', 1)[-1]}{below}"

    def targets(self) -> dict[str, str]:
        """source dataset -> target dataset, in the order of `sources`."""
        return {source: self.target_of(source) for source in self.sources}

    @property
    def archive_target(self) -> str | None:
        """Where the carried WAL archive lands: its leaf under `<target>/pozol_wal/`."""
        if self.archive is None:
            return None
        return f"{self.target_parent}/{ARCHIVES}/{self.archive.rsplit('/', 1)[-1]}"

    def receiving(self) -> tuple[str, ...]:
        """Every dataset the link receives into: the sources' targets and the archive's."""
        archive = self.archive_target
        return (*self.targets().values(), *((archive,) if archive else ()))

    def archive_label(self, stamp: str) -> str:
        """The archive's snapshot a run takes and sends (`stamp`: %Y%m%dT%H%M%S)."""
        return f"{ARCHIVE_PREFIX}{self.name}-{stamp}"

    @property
    def archive_prefix(self) -> str:
        return f"{ARCHIVE_PREFIX}{self.name}-"

    @property
    def hold_tag(self) -> str:
        """The `zfs hold` tag of this link: per link, so links never release each other's."""
        return f"pozol-link-{self.name}"


def _dataset(field: str, value: object) -> str:
    try:
        return dataset_name(value)
    except InvalidValue as error:
        raise ReplicationError(field, f"Bad dataset name {value!r}: {error.reason}.") from None


def _link_name(value: object) -> str:
    if not isinstance(value, str) or not _LINK_NAME.match(value) or len(value) > LINK_NAME_MAX:
        raise ReplicationError(
            "name", f"The link name {value!r} must be 1-{LINK_NAME_MAX} characters of "
                    "a-z 0-9 _ - starting with a letter or digit.")
    return value


def _sources(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not value:
        raise ReplicationError("sources", "Give at least one source dataset.")
    if len(value) > MAX_SOURCES:
        raise ReplicationError("sources", f"At most {MAX_SOURCES} source datasets per link.")
    sources = tuple(_dataset("sources", v) for v in value)
    if len(set(sources)) != len(sources):
        raise ReplicationError("sources", "A source dataset is listed twice.")
    for a in sources:
        for b in sources:
            if b.startswith(a + "/"):
                raise ReplicationError(
                    "sources", f"{b} lies inside {a}: give the datasets themselves, not "
                               "a parent and its child.")
    if len(sources) > 1 and len({s.split("/")[0] for s in sources}) > 1:
        raise ReplicationError("sources", "A cluster's datasets must be in one pool.")
    return sources


def _common(sources: tuple[str, ...]) -> list[str]:
    common: list[str] = []
    for components in zip(*(s.split("/") for s in sources), strict=False):
        if len(set(components)) != 1:
            break
        common.append(components[0])
    return common


def _bandwidth(value: object) -> None:
    if value is None:
        return
    if not is_whole(value):
        raise ReplicationError("bandwidth_limit",
                               f"The bandwidth limit is a whole number of bytes per second, "
                               f"not {value!r}.")
    if not MIN_BANDWIDTH <= value <= MAX_BANDWIDTH:
        raise ReplicationError(
            "bandwidth_limit", f"The bandwidth limit must be between {MIN_BANDWIDTH} B/s "
                               f"(64 KiB/s) and {MAX_BANDWIDTH} B/s (100 GiB/s), not {value}.")
