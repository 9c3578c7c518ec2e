"""What the UI, the API and the scheduler ask of restore drills: schedules, running one
now, the periodic tick, the host's alert, and the orphan reconciler. None opens SSH.

A drill resolves its source when it starts: the cluster's newest snapshot present on
its data and WAL datasets (or, for a link, the newest snapshot received on every
target dataset), laid out exactly as a member's clone (apps.clones.services) on a
port from the top of the host's clone range, and hands that to one `drills.run`
operation. For a link the clone is made on the target host from the received
datasets with the source cluster's layout: the target needs the same PostgreSQL
binaries at the same path.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.clones import services as clone_services
from apps.clones.core.layout import (
    CLONE_FIRST_WRITES,
    CloneError,
    Layout,
    Origin,
    Recovery,
    clone_uid,
)
from apps.clones.models import CloneHostSettings
from apps.common.errors import Conflict, DomainError
from apps.common.numbers import whole_in
from apps.drills import steps
from apps.drills.core import check as core
from apps.drills.host_alert import update_alert
from apps.drills.models import DrillRun, DrillSchedule
from apps.fleet import reserves
from apps.fleet.models import Host, PgCluster
from apps.ops import engine
from apps.ops.models import Operation
from apps.ops.schedule import due
from apps.remote.commands import InvalidValue
from apps.replication.models import ReplicationLink
from apps.snapshots.models import Snapshot
from apps.wal.models import WalArchive

MAX_INTERVAL_HOURS = 24 * 90


class DrillError(DomainError):
    """A drill request refused; `fields` names the inputs at fault."""


def _refuse(field: str, text: str, *, code: str = "invalid", status: int = 400) -> DrillError:
    return DrillError(f"{field}: {text}", fields={field: [text]}, code=code, status=status)


# ---- schedules ----------------------------------------------------------------------------

def save_schedule(*, host: Host | None = None, cluster: PgCluster | None = None,
                  link: ReplicationLink | None = None, interval_hours: int = 24,
                  check_query: str = "", enabled: bool = True,
                  target: str = DrillSchedule.Target.SNAPSHOT,
                  schedule: DrillSchedule | None = None, by=None) -> DrillSchedule:
    """Create (no `schedule`) or change a drill schedule: a cluster on `host`, or a link
    (drilled on its target); of the newest snapshot, or of a random moment in the
    cluster's WAL archive's window."""
    if not whole_in(interval_hours, 1, MAX_INTERVAL_HOURS):
        raise _refuse("interval_hours", f"whole hours from 1 to {MAX_INTERVAL_HOURS}")
    if target not in DrillSchedule.Target.values:
        raise _refuse("target", f"one of {', '.join(DrillSchedule.Target.values)}")
    query = _query(check_query) if check_query else ""
    if schedule is None:
        schedule = DrillSchedule(created_by=by if by and by.is_authenticated else None,
                                 **_target(host, cluster, link))
    if target == DrillSchedule.Target.RANDOM_MOMENT:
        _archives(schedule)
    schedule.interval_hours, schedule.check_query = interval_hours, query
    schedule.target = target
    schedule.enabled = bool(enabled)
    if DrillSchedule.objects.exclude(pk=schedule.pk).filter(
            host=schedule.host, cluster_data_dir=schedule.cluster_data_dir,
            link=schedule.link).exists():
        raise _refuse("cluster", "that cluster (or link) has a drill schedule already",
                      code="conflict", status=409)
    schedule.save()
    return schedule


def _target(host: Host | None, cluster: PgCluster | None,
            link: ReplicationLink | None) -> dict:
    if link is not None:
        if not link.cluster_data_dir:
            raise _refuse("link", f"link {link.name} copies datasets, not a cluster: there is "
                                  "nothing to start")
        return {"host": link.target_host, "cluster_data_dir": link.cluster_data_dir,
                "link": link}
    if cluster is None or host is None or cluster.host_id != host.pk:
        raise _refuse("cluster", "a cluster of this host")
    return {"host": host, "cluster_data_dir": cluster.data_dir, "link": None}


def _archives(schedule: DrillSchedule) -> WalArchive:
    """The WAL archive a drill to a moment replays from (for a link: the source cluster's,
    which the link carries); refused when there is none."""
    host = schedule.link.source_host if schedule.link_id else schedule.host
    archive = WalArchive.objects.filter(cluster__host=host,
                                        cluster__data_dir=schedule.cluster_data_dir,
                                        state=WalArchive.State.ON).first()
    if archive is None:
        raise _refuse("target", f"the WAL of {schedule.cluster_data_dir} is not archived by "
                                "PoZoL: a drill to a moment needs archiving on",
                      code="not_archiving", status=409)
    return archive


def random_moment(spans: list[list[float]], *, pick=None) -> float | None:
    """A moment drawn uniformly over the window's intervals ([[since, until]], epoch
    seconds); None when the window is empty."""
    total = sum(max(0.0, until - since) for since, until in spans)
    if total <= 0:
        return None
    offset = (pick or secrets.SystemRandom().uniform)(0.0, total)
    for since, until in spans:
        length = max(0.0, until - since)
        if offset <= length:
            return since + offset
        offset -= length
    return spans[-1][1]


def _query(value: object) -> str:
    try:
        return core.check_query(value)
    except CloneError as exc:
        raise _refuse("check_query", str(exc)) from None


# ---- running one ----------------------------------------------------------------------------

def run_now(schedule: DrillSchedule, *, by=None, trigger: str = Operation.Trigger.API,
            at: datetime | None = None) -> DrillRun:
    """Start a drill of the schedule's source now (with `at`: replayed to that moment,
    whatever the schedule's target); refused while one runs for it."""
    with transaction.atomic():
        schedule = DrillSchedule.objects.select_for_update(of=("self",)).select_related(
            "host", "link").get(pk=schedule.pk)
        running = schedule.runs.filter(status=DrillRun.Status.RUNNING).first()
        if running is not None and _ended_without_result(running):
            running = None
        if running is not None:
            raise Conflict(f"drill #{running.pk} of {schedule.source_label} is running",
                           code="busy")
        if at is not None:
            _archives(schedule)  # a 409 before anything is recorded
            if at.tzinfo is None:
                raise _refuse("at", "give the moment with its time zone")
        schedule.last_started_at = timezone.now()
        schedule.save(update_fields=["last_started_at"])
        return _start(schedule, by=by, trigger=trigger, at=at)


def replaying(host: Host, archive_copy: str) -> set[str]:
    """The snapshots of the archive's copy on `host` that a running restore drill there
    replays from (apps.replication.readers): cloned when its script runs."""
    running = DrillRun.objects.filter(host=host, status=DrillRun.Status.RUNNING,
                                      layout__recovery__archive=archive_copy)
    return {found for found in running.values_list("layout__recovery__label", flat=True)
            if found}


def clone_room(host: Host, origin: Origin, what: str) -> dict:
    """The ZFS quota of a drill's (or a table recovery's) clone and the room check its
    step repeats on the host; refused (409, the figures) when the clone's first writes
    would take its pool below the reserve, as discovery last read it: production keeps
    its room. The quota is the host's per-clone one, as a member's clone gets."""
    quota = clone_services.settings_of(host).clone_quota
    pools = origin.pools
    needed = min(quota, CLONE_FIRST_WRITES)
    shortage = reserves.first_refusal(host, pools, needed, what)
    if shortage:
        raise _refuse("cluster", shortage.message, code="no_room", status=409)
    return {"quota": quota, "room": reserves.room_state(pools, needed, what)}


def _ended_without_result(run: DrillRun) -> bool:
    """A run whose operation ended without its step recording it (cancelled, or past
    its deadline) is failed now, with the operation's words, rather than running
    forever and blocking its schedule."""
    operation = run.operation
    if operation is None or operation.is_active:
        return False
    run.status, run.finished_at = DrillRun.Status.FAILED, timezone.now()
    run.error = f"its operation #{operation.pk} ended {operation.status}: {operation.error}"
    run.save(update_fields=["status", "finished_at", "error"])
    update_alert(run.host)
    return True


def _start(schedule: DrillSchedule, *, by, trigger: str,
           at: datetime | None = None) -> DrillRun:
    host = schedule.host
    run = DrillRun.objects.create(
        schedule=schedule, host=host, cluster_data_dir=schedule.cluster_data_dir,
        link=schedule.link, check_query=schedule.query,
        triggered_by=by if by and by.is_authenticated else None)
    try:
        origin, datasets = _origin(schedule)
        if at is not None or schedule.target == DrillSchedule.Target.RANDOM_MOMENT:
            snapshot, recovery = _moment(schedule, run, at)
        else:
            snapshot, recovery = _newest(host, datasets), None
        layout = disposable_layout(host, origin, snapshot, run.clone_name, recovery=recovery)
        room = clone_room(host, origin, "a restore drill")
    except DomainError as exc:
        if at is not None:
            raise  # a moment the operator asked for: refused, nothing recorded
        # Nothing to drill is a failed drill, with its reason: the alert says so.
        _finish_unstarted(run, str(exc))
        return run
    run.snapshot, run.datasets, run.port = snapshot, datasets, layout.port
    run.layout = layout.stored()
    operation = engine.start(steps.RUN.name, host=host, trigger=trigger, user=by,
                             subject=f"{host.name}: restore drill of "
                                     f"{schedule.source_label} @{snapshot}"[:200],
                             state={"run": run.pk, **room})
    run.operation = operation
    run.save()
    return run


def _moment(schedule: DrillSchedule, run: DrillRun,
            at: datetime | None = None) -> tuple[str, Recovery]:
    """The moment asked, or one drawn in the archive's window as its last read (for a
    link: its last run) recorded it, and the snapshot and replay that reach it
    (apps.clones' point-in-time path; on a link's target, the received snapshots and
    the copy of the archive the link carried)."""
    archive = _archives(schedule)
    link = schedule.link
    if at is None:
        drawn = random_moment((link.archive_window if link else archive.window) or [])
        if drawn is None:
            where = f"on {link.target_host.name} (link {link.name})" if link else ""
            raise _refuse("target", f"the WAL archive of {schedule.cluster_data_dir} reaches "
                                    f"no moment {where} yet (a snapshot, then archived WAL "
                                    "after it, replicated)".replace("  ", " "))
        at = datetime.fromtimestamp(drawn, UTC)
    run.target_time = at
    run.archive_timeout = archive.archive_timeout
    if link is not None:
        return _moment_on_target(link, archive, run)
    moment = clone_services.moment_for(archive.cluster, run.clone_name, at=run.target_time)
    return moment.snapshot, moment.recovery


def _moment_on_target(link: ReplicationLink, archive: WalArchive,
                      run: DrillRun) -> tuple[str, Recovery]:
    """The received snapshot and the carried archive's received snapshot that reach the
    run's moment on the link's target (apps.clones' clone on a target, apps.wal.copies)."""
    try:
        moment = clone_services.moment_on_target(link, archive.cluster, run.clone_name,
                                                 at=run.target_time)
    except DomainError as exc:
        raise DrillError(str(exc), fields=exc.fields, code=exc.code, status=exc.status) from None
    return moment.snapshot, moment.recovery


def _origin(schedule: DrillSchedule) -> tuple[Origin, list[str]]:
    link = schedule.link
    source_host = link.source_host if link else schedule.host
    cluster = (source_host.clusters.filter(data_dir=schedule.cluster_data_dir)
               .select_related("data_dataset", "wal_dataset").first())
    if cluster is None:
        raise _refuse("cluster", f"no cluster at {schedule.cluster_data_dir} on "
                                 f"{source_host.name} (run discovery)")
    if link is None:
        origin = clone_services.origin_of(source_host, cluster)
    else:
        try:
            origin = clone_services.origin_on_target(link, cluster)
        except DomainError as exc:
            raise DrillError(str(exc), fields=exc.fields, code=exc.code,
                             status=exc.status) from None
    datasets = [origin.data_dataset] + ([origin.wal_dataset] if origin.wal_dataset else [])
    return origin, datasets


def _newest(host: Host, datasets: list[str]) -> str:
    rows = [core.SnapshotSeen(dataset=d, name=n, created=c) for d, n, c in
            Snapshot.objects.filter(host=host, dataset__in=datasets)
            .values_list("dataset", "name", "created_at")]
    newest = core.newest_common(rows, datasets)
    if newest is None:
        raise _refuse("snapshot", f"no snapshot of {' and '.join(datasets)} on {host.name} "
                                  "in the inventory")
    return newest


def disposable_ports(host: Host) -> set[int]:
    """The ports a running drill or table recovery holds on `host` for its clone."""
    taken = set(DrillRun.objects.filter(host=host, status=DrillRun.Status.RUNNING)
                .exclude(port=None).values_list("port", flat=True))
    return taken | {op.state["layout"]["port"] for op in Operation.objects.filter(
        host=host, kind=steps.RECOVER.name, status__in=Operation.ACTIVE).only("state")}


def free_clone_port(host: Host, limits: CloneHostSettings) -> int | None:
    """A port of the host's clone range (`limits`) that no clone, running drill, running
    table recovery or discovered cluster uses; None when every one is taken."""
    return core.pick_port(limits.port_min, limits.port_max,
                          clone_services.ports_in_use(host))


def disposable_layout(host: Host, origin: Origin, snapshot: str, name: str, *,
                      no_port_status: int = 400, recovery: Recovery | None = None) -> Layout:
    """The layout of a clone PoZoL makes, uses and destroys itself (a drill's, a table
    recovery's): a port from the top of the clone range, no network in pg_hba; with
    `recovery`, replayed to a moment as a point-in-time clone is."""
    limits = clone_services.settings_of(host)
    port = free_clone_port(host, limits)
    if port is None:
        raise _refuse("port", f"every port of {host.name}'s clone range "
                              f"{limits.port_min}-{limits.port_max} is taken", code="no_port",
                      status=no_port_status)
    try:
        # Listening where clones do (a loopback address can be another host's here), with
        # no network allowed in pg_hba: only the owner over its socket gets in.
        return Layout(origin=origin, name=name, snapshot=snapshot, port=port,
                      listen=limits.listen_address or host.address, allowed=(),
                      role="pozol_drill",
                      socket_dir=f"{host.work_dir.rstrip('/')}/clones/{name}",
                      os_uid=clone_uid(limits.uid_base, port), recovery=recovery)
    except (CloneError, InvalidValue, ValueError) as exc:
        raise _refuse(getattr(exc, "field", "layout"), str(exc)) from None


def _finish_unstarted(run: DrillRun, why: str) -> None:
    run.status, run.error, run.finished_at = DrillRun.Status.FAILED, why, timezone.now()
    run.save()
    update_alert(run.host)


# ---- the schedule's tick -------------------------------------------------------------------

def tick(now=None) -> list[DrillRun]:
    """Start every enabled schedule whose period has passed (beat)."""
    now = now or timezone.now()
    started = []
    for schedule in DrillSchedule.objects.filter(enabled=True).select_related("host"):
        if due(schedule.last_started_at, timedelta(hours=schedule.interval_hours), now):
            try:
                started.append(run_now(schedule, trigger=Operation.Trigger.SCHEDULE))
            except Conflict:
                continue
    return started


def grace() -> timedelta:
    return timedelta(minutes=settings.POZOL["ORPHAN_GRACE_MINUTES"])


def delete_schedule(schedule: DrillSchedule) -> None:
    """Remove a schedule (its runs stay, as history); the host's alert is re-read."""
    host = schedule.host
    schedule.delete()
    update_alert(host)
