"""The commands of WAL archiving, from apps.remote's validators and quoting, and the
reading of their output. Pure: building text and parsing text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from apps.remote import alter_system
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import (
    Command,
    InvalidValue,
    dataset_name,
    os_user,
    script,
    snapshot_label,
)
from apps.wal.core import plan as archive_plan
from apps.wal.core.segments import DEFAULT_SEGMENT_SIZE, BadWal, is_segment_name, parse_name
from apps.wal.core.window import Archived, LastTransaction

REMOVE_CHUNK = 400  # names per rm: far below any ARG_MAX
# Segments read back from the newest for the last transaction: a busy cluster has one in
# the newest; a quiet one archives a segment per archive_timeout only when it wrote.
LAST_TRANSACTION_LOOKBACK = 8
# pg_waldump's description of a commit or an abort, under TZ=UTC (src/bin/pg_waldump/
# compat.c prints local time with its zone name).
_LAST_TRANSACTION = re.compile(
    r"^(?P<segment>[0-9A-F]{24}) .*desc: (?:COMMIT|ABORT)(?:_PREPARED \d+:)? "
    r"(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) UTC\b")

# What the archiver did, where the cluster writes now, and its segment size: one row.
STATUS_SQL = (
    "select coalesce(last_archived_wal, ''), "
    "coalesce(extract(epoch from last_archived_time)::text, ''), failed_count, "
    "coalesce(last_failed_wal, ''), coalesce(extract(epoch from last_failed_time)::text, ''), "
    "archived_count, pg_walfile_name(pg_current_wal_lsn()), pg_current_wal_lsn(), "
    "(select setting from pg_settings where name = 'wal_segment_size'), "
    "current_setting('archive_mode') from pg_stat_archiver;")
# The archive_command the cluster runs, hex-encoded: one line whatever it holds.
COMMAND_SQL = ("select encode(convert_to(current_setting('archive_command'), 'UTF8'), "
               "'hex');")
MARK_SQL = "select pg_current_wal_lsn(), extract(epoch from clock_timestamp());"
SWITCH_SQL = "select pg_switch_wal();"
RESTORE_POINT_SQL = ("select pg_create_restore_point(:'name'), "
                     "extract(epoch from clock_timestamp());")

_MAKE = """\
set -e
if ! zfs list {dataset} > /dev/null 2>&1; then
  zfs create -p -o compression=on -o atime=off -o {mark} {dataset}
fi
if [ "$(zfs get -H -o value mounted {dataset})" != yes ]; then zfs mount {dataset}; fi
m=$(zfs get -H -o value mountpoint {dataset})
case "$m" in /*) ;; *) echo "{dataset} is not mounted (mountpoint $m)" >&2; exit 1;; esac
chown {owner}: "$m"
chmod 700 "$m"
echo "$m"
"""

# The newest transaction in the archive directory "$m" (the current directory): a replay
# to a moment after it would run out of WAL before its target, which PostgreSQL refuses.
# The newest segments first, until one holds a commit or an abort.
_LAST_TRANSACTION_SH = """\
echo '== last transaction'
for f in $(find . -maxdepth 1 -type f -printf '%f\\n' | grep -xE '[0-9A-F]{{24}}' | sort -r \
           | head -n {looked}); do
  t=$(runuser -u {owner} -- env TZ=UTC {waldump} -r Transaction "$m/$f" 2> /dev/null \
      | grep -E 'desc: (COMMIT|ABORT)' | tail -n 1)
  if [ -n "$t" ]; then echo "$f $t"; break; fi
done
"""

_STATUS = """\
echo '== archiver'
{status}
echo '== archive failure'
{failure}
echo '== archive command'
{command}
echo '== dataset'
zfs get -Hp -o property,value used,available,mountpoint,mounted {dataset}
m=$(zfs get -H -o value mountpoint {dataset})
echo '== files'
# Not mounted, the directory is the parent's: what is there is not in the archive.
[ "$(zfs get -H -o value mounted {dataset})" = yes ] || exit 0
cd "$m" && find . -maxdepth 1 -type f -printf '%f %T@\\n'
""" + _LAST_TRANSACTION_SH


# The archive command's note of its last failure (core/plan.py), when there is one: its
# mtime, the segment and the reason, on one line (read as root: the data directory is
# the owner's, 0700).
_FAILURE = """\
[ ! -f {note} ] || echo "$(stat -c %Y {note}) $(head -c 1024 {note} | tr -s '[:cntrl:]' ' ')"
"""


def make_dataset(dataset: str, owner: str, data_dir: str) -> Command:
    """Create the archive (if missing), owned by the cluster's OS user, 0700; prints its
    mountpoint. `pozol:wal_archive` names the cluster it archives."""
    return script(_MAKE, dataset=dataset_name(dataset), owner=os_user(owner),
                  mark=f"pozol:wal_archive={data_dir}",
                  shown=f"create {dataset} (compression on) for the WAL archive, owned by "
                        f"{owner}, 0700")


def read_settings(target: ClusterTarget) -> Command:
    return alter_system.read(target, archive_plan.SETTINGS)


def parse_settings(stdout: str) -> dict[str, dict]:
    """name -> {"value", "from_auto_conf"}: the form the archive's row keeps, and what a
    restore writes back from (alter_system.giving_back)."""
    rows = alter_system.parse(archive_plan.SETTINGS, stdout)
    return {name: {"value": rows[name]["setting"], "from_auto_conf": rows[name]["from_auto_conf"]}
            for name in archive_plan.SETTINGS}


def write_settings(target: ClusterTarget, values: dict[str, str | None]) -> Command:
    """ALTER SYSTEM SET each of the archive settings (None: RESET), then a reload; no
    other setting is ever written here."""
    for name in values:
        if name not in archive_plan.SETTINGS:
            raise InvalidValue("archive setting", name, ", ".join(archive_plan.SETTINGS))
    return alter_system.write(target, values)


def restoring(before: dict[str, dict]) -> dict[str, str | None]:
    """The writes that put `before` (parse_settings' form) back."""
    return alter_system.giving_back(
        {name: row for name, row in before.items() if name in archive_plan.SETTINGS})


def status(target: ClusterTarget, dataset: str) -> Command:
    # Without the data directory (a target made for psql only) the note is not read.
    failure = (script(_FAILURE, note=f"{target.data_dir.rstrip('/')}/{archive_plan.FAILURE_NOTE}")
               if target.data_dir else script(":"))
    return script(_STATUS, status=target.psql(STATUS_SQL), dataset=dataset_name(dataset),
                  failure=failure, command=target.psql(COMMAND_SQL), **_waldump(target),
                  shown=f"read pg_stat_archiver and list the archive {dataset}")


def _waldump(target: ClusterTarget) -> dict:
    return {"owner": target.owner, "waldump": f"{target.bin_dir}/pg_waldump",
            "looked": LAST_TRANSACTION_LOOKBACK}


def mark(target: ClusterTarget) -> Command:
    return target.psql(MARK_SQL)


def switch(target: ClusterTarget) -> Command:
    return target.psql(SWITCH_SQL)


def restore_point(target: ClusterTarget, name: str) -> Command:
    return target.psql(RESTORE_POINT_SQL, name=archive_plan.restore_point_name(name))


def parse_mark(stdout: str) -> tuple[str, float]:
    lsn, at = stdout.strip().split("\t")
    return lsn, float(at)


@dataclass(frozen=True)
class Archiver:
    last_archived_wal: str
    last_archived_at: float | None
    failed_count: int
    last_failed_wal: str
    last_failed_at: float | None
    archived_count: int
    current_wal: str
    current_lsn: str
    segment_size: int
    archive_mode: str


@dataclass(frozen=True)
class Failure:
    """The reason the archive command gave for its last failure (its note)."""

    at: float  # when it was written (the note's mtime), epoch seconds
    wal: str  # the file PostgreSQL asked to archive
    reason: str  # what the copy printed: one line of printable text, bounded


@dataclass(frozen=True)
class Status:
    archiver: Archiver
    used: int | None
    available: int | None
    mountpoint: str
    archived: list[Archived]  # the segment files (other files are left alone)
    mounted: bool = True
    # The newest commit or abort found in the newest segments, None if none was found.
    last_transaction: LastTransaction | None = None
    # The archive command's note of its last failure; None when it has none (its last
    # run succeeded, or it is a command from before the note).
    failure: Failure | None = None
    # The archive_command the cluster runs; None: not read (a read from before it was).
    archive_command: str | None = None

    @property
    def failing(self) -> bool:
        """The archiver's last attempt failed: a failure newer than its last success."""
        a = self.archiver
        return a.last_failed_at is not None and (
            a.last_archived_at is None or a.last_failed_at > a.last_archived_at)

    def failure_reason(self) -> Failure | None:
        """The note, while the archiver fails and when written since its last success: a
        note older than that is no reason of this failure (a rollback of the data
        directory to a snapshot taken while archiving failed brings an old one back)."""
        note, last = self.failure, self.archiver.last_archived_at
        if note is None or not self.failing or (last is not None and note.at < int(last)):
            return None
        return note

    @property
    def timeline(self) -> int:
        return parse_name(self.archiver.current_wal, self.archiver.segment_size).timeline

    def lag_segments(self) -> int | None:
        """Segments written but not yet archived (the one being written not counted)."""
        size = self.archiver.segment_size
        current = parse_name(self.archiver.current_wal, size)
        done = [a.segment for a in self.archived if a.segment.timeline == current.timeline]
        if not done:
            return None
        return max(0, current.number - max(done).number - 1)


def parse_status(stdout: str) -> Status:
    sections = _sections(stdout)
    row = (sections.get("archiver") or [""])[0].split("\t")
    if len(row) != 10:
        raise InvalidValue("pg_stat_archiver", stdout[:200], "not the row asked for")
    size = int(row[8])
    archiver = Archiver(row[0], _float(row[1]), int(row[2]), row[3], _float(row[4]),
                        int(row[5]), row[6], row[7], size, row[9])
    props = dict(line.split("\t", 1) for line in sections.get("dataset", []) if "\t" in line)
    archived = []
    for line in sections.get("files", []):
        name, _, at = line.partition(" ")
        if not is_segment_name(name):
            continue  # .history, .tmp of a copy under way, anything else
        try:
            archived.append(Archived(parse_name(name, size), float(at)))
        except (BadWal, ValueError):
            continue
    return Status(archiver, _int(props.get("used")), _int(props.get("available")),
                  props.get("mountpoint", ""), archived, props.get("mounted", "yes") == "yes",
                  parse_last_transaction(sections.get("last transaction", []), size),
                  parse_failure(sections.get("archive failure", [])),
                  parse_command(sections.get("archive command")))


def parse_command(lines: list[str] | None) -> str | None:
    """COMMAND_SQL's hex line as text; None when it was not read, is empty (psql failed,
    or there is no command: nothing to compare) or is not hex."""
    if not lines:
        return None
    try:
        return bytes.fromhex("".join(lines)).decode("utf-8", "replace")
    except ValueError:
        return None


_CONTROL = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")


def clean_text(text: str, limit: int) -> str:
    """Text a host wrote, as PoZoL keeps it: each run of spaces and control characters as
    one space (never a line break, an escape sequence or a NUL), at most `limit`
    characters."""
    return _CONTROL.sub(" ", text).strip()[:limit]


def parse_failure(lines: list[str]) -> Failure | None:
    """The status script's `<mtime> <file> <reason>` line of the archive command's note;
    None without one, or when it is not such a line."""
    if not lines:
        return None
    at, _, rest = lines[0].partition(" ")
    wal, _, reason = rest.partition(" ")
    try:
        when = float(at)
    except ValueError:
        return None
    wal = clean_text(wal, 64)
    if not wal or not all(ch.isalnum() or ch in "._" for ch in wal):
        return None
    reason = clean_text(reason, archive_plan.FAILURE_BYTES)
    return Failure(when, wal, reason or "the archive command printed no reason")


def parse_last_transaction(lines: list[str], segment_size: int = DEFAULT_SEGMENT_SIZE
                           ) -> LastTransaction | None:
    """The segment and time of pg_waldump's last commit or abort line, as the status
    script prints it (`<segment> <pg_waldump line>`)."""
    for line in reversed(lines):
        found = _LAST_TRANSACTION.match(line)
        if not found:
            continue
        try:
            segment = parse_name(found["segment"], segment_size)
        except BadWal:
            continue
        at = datetime.fromisoformat(found["at"]).replace(tzinfo=UTC).timestamp()
        return LastTransaction(segment, at)
    return None


def remove(directory: str, names: list[str]) -> list[Command]:
    """`rm -f` of segment files in the archive, in chunks; each name is checked to be a
    segment file name, so nothing else is ever removed."""
    for name in names:
        if not is_segment_name(name):
            raise InvalidValue("WAL segment", name, "24 hexadecimal digits")
    directory = archive_plan.directory_path(directory)
    return [script("cd {d} && rm -f -- {names}", d=directory, names=names[i:i + REMOVE_CHUNK],
                   shown=f"remove {len(names[i:i + REMOVE_CHUNK])} archived segments no "
                         f"snapshot needs from {directory}")
            for i in range(0, len(names), REMOVE_CHUNK)]


def _sections(stdout: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        if line.startswith("== "):
            current = line[3:].strip()
            found[current] = []
        elif current is not None and line.strip():
            found[current].append(line.strip())
    return found


def _float(text: str) -> float | None:
    return float(text) if text else None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


# A replication link carries the archive (apps/replication): a snapshot of it, and what
# that snapshot holds, listed before and after it is taken. A segment in both listings
# was there when the snapshot was taken (the archive command never rewrites a segment,
# and a removed one does not come back); one archived meanwhile is left out, which
# narrows the copy's window by a moment, never widens it.
_CARRY = """\
set -e
[ "$(zfs get -H -o value mounted {dataset})" = yes ] \\
|| {{ echo "the archive {dataset} is not mounted" >&2; exit 1; }}
m=$(zfs get -H -o value mountpoint {dataset})
cd "$m"
""" + _LAST_TRANSACTION_SH + """\
echo '== before'
find . -maxdepth 1 -type f -printf '%f %T@\\n'
zfs snapshot {snapshot}
echo '== after'
find . -maxdepth 1 -type f -printf '%f %T@\\n'
"""


def carry(target: ClusterTarget, dataset: str, label: str) -> Command:
    """Snapshot the archive of `target`'s cluster as `label` (failing if that snapshot
    exists: its listing would not be this one) and list what it holds. The newest
    transaction is read first, so its segment is one the listings show (a segment is
    never rewritten once archived, and retention removes the oldest)."""
    dataset_name(dataset)
    return script(_CARRY, dataset=dataset, snapshot=f"{dataset}@{snapshot_label(label)}",
                  **_waldump(target),
                  shown=f"snapshot the WAL archive {dataset} as @{label} and list it")


@dataclass(frozen=True)
class Carried:
    timeline: int | None  # the newest listed; None when the snapshot holds no segment
    segments: list[Archived]  # those both listings show, by number, the earlier time
    last_transaction: LastTransaction | None


def parse_carried(stdout: str, segment_size: int = DEFAULT_SEGMENT_SIZE) -> Carried:
    """What a carried archive snapshot holds, from `carry`'s output."""
    sections = _sections(stdout)
    listed = [_segments(sections.get(part, []), segment_size) for part in ("before", "after")]
    after = {a.segment: a for a in listed[1]}
    both = [a for a in listed[0] if a.segment in after]
    if not both:
        return Carried(None, [], None)
    timeline = max(a.segment.timeline for a in both)
    return Carried(timeline, sorted((a for a in both if a.segment.timeline == timeline),
                                    key=lambda a: a.segment.number),
                   parse_last_transaction(sections.get("last transaction", []), segment_size))


def _segments(lines: list[str], segment_size: int) -> list[Archived]:
    found = []
    for line in lines:
        name, _, at = line.partition(" ")
        if not is_segment_name(name):
            continue
        try:
            found.append(Archived(parse_name(name, segment_size), float(at)))
        except (BadWal, ValueError):
            continue
    return found
