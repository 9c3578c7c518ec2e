"""The zfs and psql commands of snapshots, from apps.remote's quoting templates.

Every dataset and snapshot name passes apps.remote.commands' validators here,
so a hostile name never becomes a command. `zfs destroy` is only ever given
one snapshot, never -r, -R or -d: what it destroys is exactly what was named.
"""

from __future__ import annotations

import re
from dataclasses import replace

from apps.remote.cluster import ClusterTarget
from apps.remote.commands import (
    Command,
    InvalidValue,
    cmd,
    dataset_name,
    pg_identifier,
    script,
    snapshot_name,
    zfs_property,
    zfs_property_value,
)
from apps.remote.facts.snapshots import LISTING_FIELDS, LISTING_PROPERTIES

HOLD_TAG = "pozol"  # the tag of PoZoL's holds; holds under other tags are not ours
MAX_LABEL = 64
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.:,+-]*\Z")
BACKUP_START_TIMEOUT = 120  # seconds for pg_backup_start's checkpoint


def label(value: object) -> str:
    """An operator's label for a snapshot, kept in the pozol:label property."""
    if not isinstance(value, str):
        raise InvalidValue("label", value, "must be text")
    if len(value) > MAX_LABEL:
        raise InvalidValue("label", value, f"longer than {MAX_LABEL} characters")
    if value and (not value.isascii() or not _LABEL.match(value)):
        raise InvalidValue("label", value, "use letters, digits, spaces and _ . : , + - "
                                           "(starting with a letter or digit)")
    return value


def listing(snapshots: list[str] | None = None) -> Command:
    """Every snapshot of the host, with what the inventory records, in one command;
    or only the snapshots named (a snapshot just taken: no need to read 10,000)."""
    names = [snapshot_name(name) for name in snapshots or []]
    command = cmd("zfs", "get", "-Hp", "-o", LISTING_FIELDS, ",".join(LISTING_PROPERTIES),
                  *names)
    shown = f"list {len(names)} snapshots" if names else "list snapshots"
    # replace(), not a new Command: it keeps what it is (one program, as root).
    return replace(command, shown=f"{shown} (zfs get -Hp)")


def take(snapshots: list[str], properties: dict[str, str], *, recursive: bool = False) -> Command:
    """`zfs snapshot [-r] -o prop=value ... a@s [b@s]`: the properties are set atomically
    with the snapshot (both dialects accept -o); several names only where the host's
    ZFS takes them in one atomic command (OpenZFS)."""
    options: list[str] = []
    for name, value in properties.items():
        options += ["-o", f"{zfs_property(name)}={zfs_property_value(value)}"]
    names = [snapshot_name(name) for name in snapshots]
    return cmd("zfs", "snapshot", *(["-r"] if recursive else []), *options, *names)


def hold(snapshots: list[str]) -> Command:
    return cmd("zfs", "hold", HOLD_TAG, *(snapshot_name(name) for name in snapshots))


def holds(snapshots: list[str]) -> Command:
    """`zfs holds -H a@s b@s`: every hold on the snapshots named, with its tag (OpenZFS;
    zfs-fuse refuses the command)."""
    names = [snapshot_name(name) for name in snapshots]
    return replace(cmd("zfs", "holds", "-H", *names), shown=f"list the holds of {len(names)} "
                                                            "held snapshots (zfs holds -H)")


def release(snapshot: str) -> Command:
    return cmd("zfs", "release", HOLD_TAG, snapshot_name(snapshot))


def destroy(snapshot: str) -> Command:
    return cmd("zfs", "destroy", snapshot_name(snapshot))


def checkpoint(target: ClusterTarget) -> Command:
    return target.psql("CHECKPOINT")


def backup_start_sql(server_version_num: int | None) -> str:
    """Non-exclusive backup mode: PostgreSQL 15 renamed the functions."""
    if (server_version_num or 0) >= 150000:
        return "SELECT 'started' FROM pg_backup_start(:'label', true);"
    return "SELECT 'started' FROM pg_start_backup(:'label', true, false);"


def backup_stop_sql(server_version_num: int | None) -> str:
    if (server_version_num or 0) >= 150000:
        return "SELECT labelfile FROM pg_backup_stop(false);"
    return "SELECT labelfile FROM pg_stop_backup(false, false);"


def in_backup_mode(target: ClusterTarget, server_version_num: int | None, backup_label: str,
                   snapshot: Command) -> Command:
    """`snapshot` run between pg_backup_start and pg_backup_stop in ONE psql session.

    Non-exclusive backup mode ends with the session that started it, so psql
    reads its SQL from a fifo kept open by this shell: start, wait until psql
    printed `started`, take the snapshots, stop, close. psql's own output
    (ending with the backup_label contents) is printed at the end.
    """
    psql = target.client("psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-d",
                         pg_identifier(target.database),
                         f"--set=label={label(backup_label)}")
    template = (
        'd=$(mktemp -d) && mkfifo "$d/in" || exit 1; '
        '{psql} <"$d/in" >"$d/out" 2>&1 & pid=$!; exec 3>"$d/in"; '
        "printf '%s\\n' {start} >&3; i=0; "
        "until grep -qx started \"$d/out\"; do "
        'if ! kill -0 "$pid" 2>/dev/null || [ "$i" -ge {ticks} ]; then '
        'exec 3>&-; kill "$pid" 2>/dev/null; cat "$d/out" >&2; rm -rf "$d"; '
        "echo 'pg_backup_start did not answer' >&2; exit 3; fi; "
        "i=$((i+1)); sleep 0.05; done; "
        "{snapshot}; rc=$?; "
        "printf '%s\\n' {stop} >&3; exec 3>&-; wait \"$pid\"; prc=$?; "
        'cat "$d/out"; rm -rf "$d"; '
        '[ "$rc" -eq 0 ] || exit "$rc"; exit "$prc"'
    )
    text = script(template, psql=psql, snapshot=snapshot,
                  start=backup_start_sql(server_version_num),
                  stop=backup_stop_sql(server_version_num),
                  ticks=BACKUP_START_TIMEOUT * 20)
    return Command(text.text, shown=f"in one psql session (as {target.owner}): "
                                     f"{backup_start_sql(server_version_num)} "
                                     f"{snapshot.redacted()}; "
                                     f"{backup_stop_sql(server_version_num)}")


def dataset(value: object) -> str:
    return dataset_name(value)


def rollback(snapshot: str, *, destroy_newer: bool = False) -> Command:
    """`zfs rollback [-r]`: -r destroys the newer snapshots (the service named them and
    the operator said yes); never -R, which would destroy their clones too."""
    return cmd("zfs", "rollback", *(["-r"] if destroy_newer else []), snapshot_name(snapshot))
