"""What the UI, the API and the scheduler ask of WAL archiving. None opens SSH but
`tick`, the beat's routine read, which runs in a worker (as telemetry's collection).

Enabling and disabling are shown as a plan first (`plan_enable`, `plan_disable`: the
settings with their values now and after, and which needs a restart), then started as
one operation. A point-in-time clone asks `choose` which snapshot serves a moment.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.common.errors import Conflict, DomainError
from apps.fleet.models import Dataset, Host, PgCluster
from apps.ops import engine
from apps.ops.models import Operation
from apps.remote.commands import InvalidValue
from apps.wal import inspection, recorded, steps
from apps.wal.core import plan as archive_plan
from apps.wal.core import window as core
from apps.wal.core.segments import BadWal, parse_lsn
from apps.wal.models import RestorePoint, WalArchive


class WalRefused(DomainError):
    """A WAL archiving request refused; `fields` names the inputs at fault."""


def _refuse(field: str, text: str, *, code: str = "invalid", status: int = 400) -> WalRefused:
    return WalRefused(f"{field}: {text}", fields={field: [text]}, code=code, status=status)


def archive_of(cluster: PgCluster) -> WalArchive | None:
    return WalArchive.objects.filter(cluster=cluster).first()


def _timeout(value: object) -> int:
    try:
        return archive_plan.check_timeout(value)
    except InvalidValue as exc:
        raise _refuse("archive_timeout", exc.reason) from None


def _usable(cluster: PgCluster) -> None:
    if cluster.down_reason:
        raise Conflict(cluster.down_reason, code="cluster_down")
    if cluster.data_dataset is None:
        raise _refuse("cluster", f"the data directory {cluster.data_dir} is not on a ZFS "
                                 "dataset discovery knows: PoZoL archives clusters on ZFS")
    try:
        cluster.target()
    except InvalidValue as exc:
        raise _refuse("cluster", f"PoZoL cannot reach this cluster: {exc}") from None


def _directory(host: Host, dataset: str) -> tuple[str, bool]:
    """The archive's mountpoint: its own where it exists, else what ZFS will give it
    (the pool root's mountpoint, then the dataset's path below it)."""
    row = Dataset.objects.filter(host=host, name=dataset).first()
    if row is not None and row.mountpoint.startswith("/"):
        return row.mountpoint, True
    pool = dataset.split("/", 1)[0]
    root = Dataset.objects.filter(host=host, name=pool).values_list("mountpoint", flat=True)
    base = (root.first() or f"/{pool}").rstrip("/")
    return f"{base}/{dataset.split('/', 1)[1]}", False


def _current(cluster: PgCluster) -> dict[str, str]:
    return {name: str(row.get("setting", "")) for name in archive_plan.SETTINGS
            if (row := cluster.setting(name))}


def plan_enable(cluster: PgCluster, archive_timeout: object = archive_plan.DEFAULT_TIMEOUT
                ) -> archive_plan.Plan:
    _usable(cluster)
    timeout = _timeout(archive_timeout)
    dataset = archive_plan.archive_dataset(cluster.data_dataset.name)
    directory, exists = _directory(cluster.host, dataset)
    try:
        return archive_plan.enable_plan(_current(cluster), dataset, directory, timeout,
                                        dataset_exists=exists)
    except InvalidValue as exc:
        raise _refuse("cluster", _unusable_directory(directory, exc)) from None


def _unusable_directory(directory: str, exc: InvalidValue) -> str:
    return (f"the archive would be mounted at {directory}, which PoZoL cannot archive "
            f"into: {exc.reason}")


def enable(cluster: PgCluster, archive_timeout: object = archive_plan.DEFAULT_TIMEOUT, *,
           by=None, trigger: str = Operation.Trigger.API) -> tuple[WalArchive, Operation]:
    """Start archiving `cluster`'s WAL (the plan_enable changes): one wal.enable."""
    plan = plan_enable(cluster, archive_timeout)
    timeout = _timeout(archive_timeout)
    host = cluster.host
    with transaction.atomic():
        archive = WalArchive.objects.select_for_update().filter(cluster=cluster).first()
        if archive is not None and archive.state != WalArchive.State.OFF and (
                archive.state != WalArchive.State.FAILED):
            raise Conflict(f"archiving of {cluster.data_dir} is {archive.state} already",
                           code=archive.state)
        if archive is not None and archive.state == WalArchive.State.FAILED and archive.before:
            _busy(archive)
        archive = archive or WalArchive(cluster=cluster)
        archive.dataset, archive.archive_timeout = plan.dataset, timeout
        archive.state, archive.error = WalArchive.State.ENABLING, ""
        archive.save()
        operation = engine.start(
            steps.ENABLE.name, host=host, trigger=trigger, user=by,
            subject=f"{host.name}: archive the WAL of {cluster.data_dir}"[:200],
            state={"archive": archive.pk, "target": cluster.target().as_state(),
                   "timeout": timeout, "plan": plan.as_dict()})
        archive.last_operation = operation
        archive.save(update_fields=["last_operation"])
    return archive, operation


def plan_disable(archive: WalArchive) -> archive_plan.Plan:
    return archive_plan.disable_plan(_current(archive.cluster), archive.before, archive.dataset)


def disable(archive: WalArchive, *, by=None, trigger: str = Operation.Trigger.API) -> Operation:
    """Give the cluster its settings from before archiving back (the archive is kept)."""
    with transaction.atomic():
        archive = WalArchive.objects.select_for_update().select_related(
            "cluster__host").get(pk=archive.pk)
        if archive.state not in (WalArchive.State.ON, WalArchive.State.FAILED):
            raise Conflict(f"archiving of {archive.cluster.data_dir} is {archive.state}",
                           code=archive.state)
        if not archive.before:
            raise Conflict("the settings from before archiving were never read: nothing to "
                           "give back", code="no_before")
        _busy(archive)
        cluster, host = archive.cluster, archive.cluster.host
        if cluster.down_reason:
            raise Conflict(cluster.down_reason, code="cluster_down")
        archive.state = WalArchive.State.DISABLING
        operation = engine.start(
            steps.DISABLE.name, host=host, trigger=trigger, user=by,
            subject=f"{host.name}: stop archiving the WAL of {cluster.data_dir}"[:200],
            state={"archive": archive.pk, "target": cluster.target().as_state(),
                   "plan": plan_disable(archive).as_dict()})
        archive.last_operation = operation
        archive.save(update_fields=["state", "last_operation"])
    return operation


def refresh_command(archive: WalArchive, *, by=None,
                    trigger: str = Operation.Trigger.API) -> Operation:
    """Write the archive_command PoZoL writes for this archive now (a reload, no restart):
    for an archive whose last read found another (an older PoZoL's, or one changed by
    hand). archive_mode, archive_timeout and the settings from before are left as they
    are."""
    with transaction.atomic():
        archive = WalArchive.objects.select_for_update().select_related(
            "cluster__host").get(pk=archive.pk)
        cluster, host = archive.cluster, archive.cluster.host
        if archive.state != WalArchive.State.ON:
            raise Conflict(f"archiving of {cluster.data_dir} is {archive.state}",
                           code=archive.state)
        if not archive.command_outdated:
            raise Conflict(f"the archive_command of {cluster.data_dir} is PoZoL's current "
                           "one (as of the last read): nothing to refresh", code="current")
        try:
            archive_plan.archive_command(archive.directory)
        except InvalidValue as exc:
            raise Conflict(_unusable_directory(archive.directory, exc) + ": turn archiving "
                           "off, and on again once the pool's mountpoint is shorter",
                           code="bad_directory") from None
        _busy(archive)
        if cluster.down_reason:
            raise Conflict(cluster.down_reason, code="cluster_down")
        operation = engine.start(
            steps.REFRESH.name, host=host, trigger=trigger, user=by,
            subject=f"{host.name}: refresh the archive_command of {cluster.data_dir}"[:200],
            state={"archive": archive.pk, "target": cluster.target().as_state(),
                   "directory": archive.directory})
        archive.last_operation = operation
        archive.save(update_fields=["last_operation"])
    return operation


def _busy(archive: WalArchive) -> None:
    if archive.last_operation_id and Operation.objects.filter(
            pk=archive.last_operation_id, status__in=Operation.ACTIVE).exists():
        raise Conflict(f"archiving of {archive.cluster.data_dir} is busy (operation "
                       f"#{archive.last_operation_id})", code="busy")


def check(archive: WalArchive, *, trigger: str = Operation.Trigger.API, by=None) -> Operation:
    """Read the archiver and the archive now (what the tick does on its own)."""
    cluster = archive.cluster
    if archive.state != WalArchive.State.ON:
        raise Conflict(f"archiving of {cluster.data_dir} is {archive.state}", code=archive.state)
    return engine.start(steps.CHECK.name, host=cluster.host, trigger=trigger, user=by,
                        subject=f"{cluster.host.name}: check the WAL archive of "
                                f"{cluster.data_dir}"[:200],
                        state={"archive": archive.pk, "target": cluster.target().as_state()})


def create_restore_point(archive: WalArchive, name: object, *, by=None,
                         trigger: str = Operation.Trigger.API) -> Operation:
    """Start making a named restore point (pg_create_restore_point): a moment a clone can
    later be asked for by its name."""
    try:
        name = archive_plan.restore_point_name(name)
    except InvalidValue as exc:
        raise _refuse("name", exc.reason) from None
    cluster = archive.cluster
    if archive.state != WalArchive.State.ON:
        raise Conflict(f"archiving of {cluster.data_dir} is {archive.state}: a restore point "
                       "is of use only while the WAL is archived", code=archive.state)
    if archive.restore_points.filter(name=name).exists():
        raise _refuse("name", f"a restore point named {name} exists already", code="conflict",
                      status=409)
    return engine.start(steps.RESTORE_POINT.name, host=cluster.host, trigger=trigger, user=by,
                        subject=f"{cluster.host.name}: restore point {name} of "
                                f"{cluster.data_dir}"[:200],
                        state={"archive": archive.pk, "name": name,
                               "target": cluster.target().as_state()})


def tick(now: datetime | None = None) -> list[Operation]:
    """Read every archive that is on and not read within the interval (beat), without an
    Operation: a check a minute per archive would bury the operations list. What the
    read found is recorded at once; an archive with segments or replay snapshots to
    remove gets a `wal.check` Operation, which removes them and logs each removal."""
    now = now or timezone.now()
    every = timedelta(seconds=settings.POZOL["WAL_CHECK_INTERVAL"])
    due = []
    for archive in WalArchive.objects.filter(state=WalArchive.State.ON).select_related(
            "cluster__host", "cluster__data_dataset", "cluster__wal_dataset"):
        if archive.checked_at and now - archive.checked_at < every * 0.9:
            continue
        if _checking(archive):
            continue
        if not archive.cluster.host.is_pinned or archive.cluster.down_reason:
            continue
        due.append(archive)
    pruning, _ = inspection.sweep(due)
    return [check(archive, trigger=Operation.Trigger.SCHEDULE) for archive in pruning
            if not _checking(archive)]


def _checking(archive: WalArchive) -> bool:
    return Operation.objects.filter(kind=steps.CHECK.name, state__archive=archive.pk,
                                    status__in=Operation.ACTIVE).exists()


# ---- moments -------------------------------------------------------------------------

def choose(cluster: PgCluster, *, at: datetime | None = None, lsn: str | None = None,
           restore_point: str | None = None, now: datetime | None = None
           ) -> tuple[core.Choice, WalArchive]:
    """The snapshot and archive that serve a moment (a time with its zone, an LSN, or a
    restore point PoZoL made: served as its time); refused (400 with the window) when
    none does."""
    field = "at" if at is not None else "lsn" if lsn is not None else "restore_point"
    archive = archive_of(cluster)
    if archive is None or archive.state != WalArchive.State.ON or not archive.directory:
        raise _refuse(field, f"the WAL of {cluster.data_dir} is not archived by PoZoL: a "
                             "clone to a moment needs archiving on (then a snapshot)",
                      code="not_archiving", status=409)
    if archive.checked_at is None:
        raise _refuse(field, "the archive was not checked yet: try again in a minute",
                      code="not_checked", status=409)
    bases = recorded.bases(archive)
    listing = _listing(archive)
    if restore_point is not None:
        at = restore_point_named(archive, restore_point).created_at
    try:
        if at is not None:
            if at.tzinfo is None:
                raise _refuse("at", "give the moment with its time zone (e.g. "
                                    "2026-11-20T14:06:00+01:00)")
            current = (now or timezone.now()).timestamp()
            # A restore point is a record of its own that a replay stops at: no later
            # transaction is needed to reach it.
            last = None if restore_point is not None else recorded.last_transaction(archive)
            return core.for_time(at.timestamp(), current, bases, listing,
                                 last=last), archive
        try:
            position = parse_lsn(lsn or "")
        except BadWal as exc:
            raise _refuse("lsn", str(exc)) from None
        return core.for_lsn(position, bases, listing,
                            segment_size=archive.segment_size or 16 * 2**20), archive
    except core.Refusal as exc:
        raise _refuse(field, str(exc), code=exc.code) from None


def restore_point_named(archive: WalArchive, name: str) -> RestorePoint:
    """The restore point PoZoL made under `name` for the archive's cluster; refused
    (400) when it made none."""
    point = archive.restore_points.filter(name=name).first()
    if point is None:
        raise _refuse("restore_point", f"PoZoL made no restore point named {name!r} for "
                                       f"{archive.cluster.data_dir}")
    return point


def _listing(archive: WalArchive) -> list[core.Archived]:
    """The archive as the last check listed it (a check a minute, WAL_CHECK_INTERVAL)."""
    return recorded.listing(archive)
