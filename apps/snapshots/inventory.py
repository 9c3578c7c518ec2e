"""The inventory follows the host: each listing replaces what a host's snapshots were.

A listing is one `zfs get` of the whole host (apps.snapshots.core.commands.listing),
run by every snapshot operation after it changed something, and by discovery
itself (the `discovered` signal its record step sends: fleet knows nothing of
snapshots), so discovery costs one SSH round trip more. Where some snapshot is
held and the host's ZFS lists holds (OpenZFS), one `zfs holds` per
HOLDS_CHUNK held snapshots follows and names who holds them; zfs-fuse keeps
the count alone. Rows are upserted and the ones a
listing no longer finds are deleted, so 10,000 snapshots cost a few queries.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import transaction
from django.utils import timezone

from apps.fleet.models import Host
from apps.remote import commands as remote_commands
from apps.remote.commands import InvalidValue
from apps.remote.facts import zfs
from apps.remote.facts.snapshots import SnapshotRow, parse_holds, parse_listing, with_holds
from apps.snapshots.core import commands
from apps.snapshots.models import Snapshot

BATCH = 2000
# Snapshot names per `zfs holds`: 200 names of at most 255 characters stay far below
# any command-line limit of sshd, sudo or the kernel.
HOLDS_CHUNK = 200
_FIELDS = ["created_at", "used", "referenced", "userrefs", "holds", "clones", "properties",
           "origin", "policy_name", "label", "seen_at"]


def list_host(runner) -> list[SnapshotRow]:
    """The host's snapshots, from one command over the operation's SSH session."""
    return parse_listing(runner(commands.listing(), timeout=300).stdout)


@transaction.atomic
def record(host: Host, rows: list[SnapshotRow]) -> dict[str, int]:
    """Make the host's inventory what `rows` say; names ZFS would refuse are left out."""
    now = timezone.now()
    kept = [row for row in rows if _valid(row)]
    objects = [_snapshot(host, row, now) for row in kept]
    Snapshot.objects.bulk_create(objects, batch_size=BATCH, update_conflicts=True,
                                 unique_fields=["host", "dataset", "name"],
                                 update_fields=_FIELDS)
    gone, _ = Snapshot.objects.filter(host=host, seen_at__lt=now).delete()
    return {"snapshots": len(kept), "gone": gone, "skipped": len(rows) - len(kept)}


def refresh(host: Host, runner) -> dict[str, int]:
    return record(host, read_holds(host, runner, list_host(runner)))


def record_listed(host: Host, runner, text: str) -> dict[str, int]:
    """`refresh` from the output of `commands.listing()` run by the caller (in a script
    of its own: a replication run lists the host's inventory with its own listing)."""
    return record(host, read_holds(host, runner, parse_listing(text)))


def read_holds(host: Host, runner, rows: list[SnapshotRow]) -> list[SnapshotRow]:
    """`rows` with the tags of their holds; no command at all when no snapshot is held
    or the host's ZFS cannot list holds (zfs-fuse: `userrefs` stays the only record)."""
    held = [row.full_name for row in rows if row.userrefs > 0 and _valid(row)]
    if not held or not lists_holds(host):
        return rows
    found: dict[str, tuple[str, ...]] = {}
    for start in range(0, len(held), HOLDS_CHUNK):
        # Not checked: a snapshot destroyed since the listing fails alone, on stderr.
        result = runner(commands.holds(held[start:start + HOLDS_CHUNK]), timeout=120,
                        check=False)
        found |= parse_holds(result.stdout)
    return with_holds(rows, found)


def lists_holds(host: Host) -> bool:
    """Whether the host's ZFS has `zfs holds` (discovery's dialect: OpenZFS does)."""
    return ((host.facts or {}).get("zfs") or {}).get("dialect") == zfs.OPENZFS


def add(host: Host, runner, snapshots: list[str]) -> int:
    """Record just these snapshots (just taken), read in one command.

    A snapshot just taken has no clones yet and changes nothing else, so
    "snapshot now" need not read the whole host (10,000 snapshots take seconds
    to list); the next discovery or destroy lists everything again.
    """
    return add_listed(host, runner, runner(commands.listing(snapshots), timeout=120).stdout)


def add_listed(host: Host, runner, text: str) -> int:
    """`add` from the output of `commands.listing(snapshots)` run by the caller (inside
    a script of its own: a clone "now" takes, lists and clones in one round trip)."""
    rows = read_holds(host, runner, parse_listing(text))
    now = timezone.now()
    objects = [_snapshot(host, row, now) for row in rows if _valid(row)]
    Snapshot.objects.bulk_create(objects, update_conflicts=True,
                                 unique_fields=["host", "dataset", "name"],
                                 update_fields=_FIELDS)
    return len(objects)


def _valid(row: SnapshotRow) -> bool:
    try:
        remote_commands.snapshot_name(row.full_name)
    except InvalidValue:
        return False
    return True


def _snapshot(host: Host, row: SnapshotRow, now: datetime) -> Snapshot:
    created = datetime.fromtimestamp(row.creation, UTC) if row.creation is not None else None
    return Snapshot(
        host=host, dataset=row.dataset, name=row.name, created_at=created, used=row.used,
        referenced=row.referenced, userrefs=row.userrefs, holds=list(row.holds),
        clones=list(row.clones),
        properties=row.properties, origin=row.origin,
        policy_name=row.properties.get("pozol:policy", "")[:255],
        label=row.properties.get("pozol:label", "")[:255], seen_at=now,
    )


def _on_discovered(sender, host: Host, runner, log, **kwargs) -> dict[str, int]:
    """Discovery's own listing of the host's snapshots: one round trip more, in its log."""
    if not (host.facts or {}).get("zfs"):
        return {}
    summary = refresh(host, runner)
    log(f"recorded {summary['snapshots']} snapshots ({summary['gone']} gone)")
    return {"snapshots": summary["snapshots"]}


def connect() -> None:
    from apps.fleet.signals import discovered

    discovered.connect(_on_discovered, dispatch_uid="snapshots.list_after_discovery")
