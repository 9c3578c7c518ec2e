"""A link's run carrying the source cluster's WAL archive (issue 23): the archive
snapshotted with what it holds, sent on the link (by steps.py, as any dataset), its
older snapshots destroyed on both sides once the new one arrived (but those a clone or
a drill on the target will read: readers.py), and what the target can replay to
recorded on the link (apps.wal.copies)."""

from __future__ import annotations

from django.utils import timezone

from apps.ops.engine import StepContext
from apps.ops.models import LogLine
from apps.remote.commands import cmd, snapshot_name
from apps.replication import readers
from apps.replication.models import ReplicationLink
from apps.wal import copies, recorded
from apps.wal.core import commands as wal_commands
from apps.wal.core.window import describe
from apps.wal.models import WalArchive


def carried(link: ReplicationLink) -> str:
    """The source cluster's WAL archive while PoZoL archives it (apps/wal), else ""."""
    if not link.cluster_data_dir:
        return ""
    archive = WalArchive.objects.filter(
        cluster__host=link.source_host, cluster__data_dir=link.cluster_data_dir,
        state=WalArchive.State.ON).exclude(directory="").first()
    return archive.dataset if archive is not None else ""


def snapshot_archive(ctx: StepContext, core, archive: WalArchive) -> None:
    """Snapshot the carried archive and keep what the snapshot holds for `finish`. A
    repeated step takes another (a second later): its own listing is the one kept."""
    label = core.archive_label(timezone.now().strftime("%Y%m%dT%H%M%S"))
    out = ctx.runner()(wal_commands.carry(archive.cluster.target(), core.archive, label),
                       timeout=300).stdout
    carried = wal_commands.parse_carried(out)
    ctx.state["carry"] = {"label": label, "listing": recorded.stored_listing(
        carried.timeline, carried.segments, carried.last_transaction)
        if carried.timeline is not None else {}}
    ctx.log(f"{core.archive}@{label} holds {len(carried.segments)} archived segments")


def drop_carry(ctx: StepContext, core) -> None:
    """A run that sends nothing leaves no archive snapshot behind (each would pin WAL
    the source's retention removes, run after refused run)."""
    name = f"{core.archive}@{ctx.state['carry']['label']}"
    result = ctx.runner()(cmd("zfs", "destroy", snapshot_name(name)), timeout=120, check=False)
    if not result.ok:
        ctx.log(f"kept {name}: {result.stderr.strip()[-300:]}", LogLine.Level.WARNING)


def archive_floor(core, sources: dict) -> float | None:
    """The oldest snapshot name of the cluster on every source dataset: its time."""
    names = set.intersection(*({s.name for s in sources[d].snapshots} for d in core.sources))
    times = [s.created.timestamp() for s in sources[core.sources[0]].snapshots
             if s.name in names]
    return min(times) if times else None


def _received_carry(ctx: StepContext, core, on_target: dict) -> str | None:
    """The archive snapshot this run took, if the target holds it now."""
    label = (ctx.state.get("carry") or {}).get("label")
    held = {s.name for s in on_target[core.archive_target].snapshots}
    return label if label in held else None


def forget_carried(ctx: StepContext, link: ReplicationLink, core, sources: dict,
                   on_target: dict, target_runner) -> None:
    """Destroy the link's older snapshots of the archive on both sides once this run's
    arrived: each would pin WAL the source's retention removed. One a replay on the
    target still clones stays until a later run (its destroy fails, harmlessly), and so
    does one a clone being made or a drill running there will clone (readers.py)."""
    kept = _received_carry(ctx, core, on_target)
    if kept is None:
        return
    wanted = readers.being_read(link.target_host, core.archive_target)
    for run, dataset, snaps in (
            (ctx.runner(), core.archive, sources[core.archive].snapshots),
            (target_runner, core.archive_target,
             on_target[core.archive_target].snapshots)):
        old = [f"{dataset}@{s.name}" for s in snaps
               if s.name.startswith(core.archive_prefix) and s.name != kept]
        for name in old:
            if dataset == core.archive_target and name.split("@", 1)[1] in wanted:
                ctx.log(f"kept {name} for now: a clone being made replays from it")
                continue
            result = run(cmd("zfs", "destroy", snapshot_name(name)), timeout=120, check=False)
            if not result.ok:
                ctx.log(f"kept {name} for now: {result.stderr.strip()[-300:]}",
                        LogLine.Level.WARNING)


def record_carried(ctx: StepContext, link: ReplicationLink, core, on_target: dict) -> None:
    """What the target can replay to now: the received archive snapshot, what it holds,
    and the window with the target's snapshots (their inventory just refreshed)."""
    label = _received_carry(ctx, core, on_target)
    if label is None:
        return
    carry = ctx.state["carry"]
    targets = core.targets()
    origin = link.source_host.clusters.filter(data_dir=link.cluster_data_dir).select_related(
        "data_dataset", "wal_dataset").first()
    wal = None
    if origin is not None and origin.wal_dataset_id and (
            origin.wal_dataset_id != origin.data_dataset_id):
        wal = targets.get(origin.wal_dataset.name)
    data = targets.get(origin.data_dataset.name) if origin and origin.data_dataset else None
    spans = []
    if data is not None:
        copy = copies.Copy(link.target_host_id, data, wal, core.archive_target, label,
                           carry.get("listing") or {}, carry.get("floor"))
        spans = copy.window()
    ReplicationLink.objects.filter(pk=link.pk).update(
        archive_snapshot=label, archive_listing=carry.get("listing") or {},
        archive_floor=carry.get("floor"), archive_window=[[s.since, s.until] for s in spans])
    ctx.log(f"the target can replay to {describe(spans)}" if spans else
            "the target reaches no moment yet: it needs a snapshot of the cluster with "
            "archived WAL after it")
