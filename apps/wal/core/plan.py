"""Where a cluster's WAL archive lives, the archive command, and the planned changes.

The archive is a dataset of its own on the data dataset's pool, under
`<pool>/pozol_wal/`, named after the data dataset (`tank/pg/data` archives into
`tank/pozol_wal/pg:data`: one per cluster, as a data dataset holds one cluster; `:` is
a valid ZFS name character that no `/` turns into). Not beside data and WAL under the
cluster's parent: apps/remote/snapshot_plan.py snapshots a parent holding only data
and WAL with one atomic `zfs snapshot -r`, and a third child would make it fall back
to pg_backup_start/stop (zfs-fuse) or the multi-snapshot form; and every snapshot of
the cluster would then also pin the archive's files, so removing old WAL would free
nothing. Compression on (WAL compresses well), atime off, owned by the cluster's OS
user, 0700.

The archive command copies to a temporary name, fsyncs it, renames it into place and
fsyncs the directory, so a segment is either whole under its name or absent; it
fails when the copy fails (PostgreSQL keeps the segment and retries); and it never
overwrites a segment already archived: the same content again (a retry after the
rename succeeded but PostgreSQL did not hear of it) is success, different content is
a failure, as PostgreSQL's documentation asks.

PostgreSQL counts the command's failures (pg_stat_archiver) but keeps their reason in
the server log only, so the command also writes the reason of a failure to
FAILURE_NOTE in the data directory (its working directory, PostgreSQL's documented
one for archive_command): the segment, then the last 500 bytes of what the copy
printed, on one line, written beside its place and renamed into it so that a read
never sees half of it; the note's mtime is when. In the data directory because that is
the place still writable when the archive is not: a read-only, full, unmounted or
missing archive is exactly when a reason is wanted, and PostgreSQL itself writes to the
data directory, as the same user, for the cluster to run at all. The command still
exits non-zero (PostgreSQL keeps the segment and retries), writes the reason to stderr
as before (the server log), and the next success removes the note; apps/wal/inspection
reads it in the same round trip as pg_stat_archiver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from apps.remote.commands import InvalidValue, abs_path, dataset_name, pool_of

ARCHIVES_PARENT = "pozol_wal"
# The archive's snapshot a point-in-time clone replays from: `<archive>@pozol-pitr-<clone>`.
PITR_PREFIX = "pozol-pitr-"
DEFAULT_TIMEOUT = 60
# The archive command's note of its last failure, in the data directory (see above), and
# how much of what the failed copy printed it keeps.
FAILURE_NOTE = "pozol_archive_failure"
FAILURE_BYTES = 500
# PostgreSQL 15 and older build the command to run in a buffer of MAXPGPATH (1024)
# bytes and silently drop what does not fit (shell_archive.c, pgarch.c); 16 has no limit.
EXPANDED_LIMIT = 1023
MIN_TIMEOUT, MAX_TIMEOUT = 10, 3600
SETTINGS = ("archive_mode", "archive_command", "archive_timeout")
# What each setting needs to take effect (pg_settings.context): shown in the plan.
APPLIES = {"archive_mode": "restart", "archive_command": "reload",
           "archive_timeout": "reload"}


def archive_dataset(data_dataset: str) -> str:
    """`tank/pg/data` -> `tank/pozol_wal/pg:data`; the pool's root -> `tank/pozol_wal/tank`."""
    dataset_name(data_dataset)
    pool = pool_of(data_dataset)
    below = data_dataset[len(pool) + 1:] if "/" in data_dataset else pool
    return dataset_name(f"{pool}/{ARCHIVES_PARENT}/{below.replace('/', ':')}")


def archive_command(directory: str) -> str:
    """The archive_command for an archive mounted at `directory` (%p and %f are
    PostgreSQL's: the segment's path and its file name; %% a literal %)."""
    d = directory_path(directory)
    # The copy runs in a subshell whose output (stderr too) is the reason kept on failure.
    # `mountpoint` refuses a directory that is not the archive's mount: with the dataset
    # unmounted its path is a directory of the parent, which is not the archive.
    copy = ("exec 2>&1; ! command -v mountpoint > /dev/null || mountpoint -q $d || "
            "{ echo \"$d is not a mount point: the archive dataset is not mounted\"; exit 1; }; "
            "if [ -f $d/$f ]; then cmp -s $p $d/$f || { [ $? = 1 ] && "
            "echo \"$d/$f is archived already with different content: not overwritten\" "
            "|| cmp $p $d/$f; exit 1; }; "
            "else cp $p $d/$f.tmp && sync $d/$f.tmp && mv $d/$f.tmp $d/$f && sync $d; fi")
    # %f and %p once each, into variables: every copy counts against EXPANDED_LIMIT.
    # The note is written beside its place and renamed into it, so a read never sees a
    # half-written one (PostgreSQL retries a failing segment every second).
    note = FAILURE_NOTE
    command = (f"d={d}; f=%f; p=%p; r=$({copy}) && {{ [ ! -e {note} ] || rm -f {note}; "
               f"exit 0; }}; printf %%s \"$r\" >&2; echo >&2; {{ echo $f; printf %%s \"$r\" "
               f"| tr -s \"[:cntrl:]\" \" \" | tail -c {FAILURE_BYTES}; }} > {note}.tmp "
               f"2> /dev/null && mv -f {note}.tmp {note}; exit 1")
    if len(expanded(command)) > EXPANDED_LIMIT:
        raise InvalidValue("archive directory", directory,
                           f"too long: PostgreSQL 15 and older cut an archive_command at "
                           f"{EXPANDED_LIMIT} bytes once %p and %f are filled in, and this "
                           f"one would cut its closing `exit 1` (a failure would read as "
                           f"success)")
    return command


def expanded(command: str, segment: str = "0" * 24) -> str:
    """The command as PostgreSQL runs it for a segment (%p, %f and %% filled in)."""
    return (command.replace("%%", "\0").replace("%p", f"pg_wal/{segment}")
            .replace("%f", segment).replace("\0", "%"))


def restore_command(directory: str) -> str:
    """A clone's restore_command: copy a segment out of the archive (fails when absent,
    which is how PostgreSQL learns the archive has no more)."""
    return f"cp {directory_path(directory)}/%f %p"


def directory_path(directory: str) -> str:
    """The path goes into a shell command PostgreSQL runs and into a quoted setting:
    only characters neither reads specially."""
    path = abs_path(directory)
    if not all(ch.isalnum() or ch in "/_.-:" for ch in path):
        raise InvalidValue("archive directory", path, "letters, digits and / _ . - : only")
    return path.rstrip("/") or "/"


_RESTORE_POINT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}\Z")


def restore_point_name(value: object) -> str:
    """A restore point's name as PoZoL makes them: 1-63 letters, digits and _ . : -
    (it goes into recovery_target_name, a quoted setting)."""
    if not isinstance(value, str) or not _RESTORE_POINT.match(value):
        raise InvalidValue("restore point", value,
                           "1-63 letters, digits and _ . : - (starting with a letter or digit)")
    return value


def check_timeout(seconds: object) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise InvalidValue("archive_timeout", seconds, "a whole number of seconds")
    if not MIN_TIMEOUT <= seconds <= MAX_TIMEOUT:
        raise InvalidValue("archive_timeout", seconds,
                           f"between {MIN_TIMEOUT} and {MAX_TIMEOUT} seconds")
    return seconds


@dataclass(frozen=True)
class Change:
    name: str
    before: str  # what the cluster has now ("" when not known)
    after: str
    applies: str  # "restart" or "reload"

    @property
    def changes(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Plan:
    dataset: str
    changes: tuple[Change, ...]
    create_dataset: bool

    @property
    def restart(self) -> bool:
        return any(c.changes and c.applies == "restart" for c in self.changes)

    def as_dict(self) -> dict:
        return {"dataset": self.dataset, "create_dataset": self.create_dataset,
                "restart": self.restart,
                "changes": [{"setting": c.name, "before": c.before, "after": c.after,
                             "applies": c.applies, "changes": c.changes}
                            for c in self.changes]}


def enable_plan(current: dict[str, str], dataset: str, directory: str, timeout: int, *,
                dataset_exists: bool) -> Plan:
    """The changes that turn archiving on, against `current` (setting -> value shown,
    as discovery read it; missing: not known)."""
    after = {"archive_mode": "on", "archive_command": archive_command(directory),
             "archive_timeout": str(check_timeout(timeout))}
    return Plan(dataset, tuple(Change(n, current.get(n, ""), after[n], APPLIES[n])
                               for n in SETTINGS), not dataset_exists)


def disable_plan(current: dict[str, str], before: dict[str, dict], dataset: str) -> Plan:
    """The changes that give the cluster its settings from before archiving back
    (`before`: what enabling read, setting -> {"value", "from_auto_conf"}). The archive
    dataset is kept: archived WAL is never destroyed by turning archiving off."""
    return Plan(dataset, tuple(
        Change(n, current.get(n, ""), (before.get(n) or {}).get("value", ""), APPLIES[n])
        for n in SETTINGS), False)
