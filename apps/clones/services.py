"""What the UI, the API and the scheduler ask of clones: make one, destroy one, expire.

None opens SSH. Making a clone checks the request against the inventory (the
cluster, its datasets' mountpoints, the snapshot on both datasets), takes a
free port from the host's range and a fresh password, records the clone and
starts one `clones.create` operation; "now" snapshots the cluster first, in the
same operation and the same SSH round trip, with snapshot now's own plan. The
password is returned to the caller once and never shown again.
"""

from __future__ import annotations

import ipaddress
import secrets
import string
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.clones import steps, tenancy
from apps.clones.core.layout import (
    CLONE_FIRST_WRITES,
    CLONE_MEMORY,
    DEFAULT_CLONE_QUOTA,
    LATEST,
    MIN_CLONE_QUOTA,
    UID_BASE_MAX,
    UID_BASE_MIN,
    CloneError,
    Layout,
    Origin,
    Recovery,
    clone_name,
    clone_uid,
)
from apps.clones.models import Clone, CloneHostSettings
from apps.common.errors import Conflict, DomainError
from apps.common.numbers import whole_in
from apps.fleet import credentials, reserves
from apps.fleet.models import Host, PgCluster
from apps.ops import engine
from apps.ops.models import Operation
from apps.remote.commands import InvalidValue, pg_identifier
from apps.replication.link_rows import core_link
from apps.replication.models import ReplicationLink
from apps.snapshots import services as snapshot_services
from apps.snapshots.core import naming
from apps.snapshots.models import Snapshot
from apps.tenants.models import Tenant
from apps.wal import copies
from apps.wal import services as wal_services
from apps.wal.core.plan import PITR_PREFIX
from apps.wal.core.segments import DEFAULT_SEGMENT_SIZE, format_lsn, parse_lsn

MAX_TTL = timedelta(days=30)
# Restore drills clone under the same parent dataset (apps.drills): their names.
RESERVED_PREFIX = "pozol-"
PASSWORD_LENGTH = 24


class CloneRefused(DomainError):
    """A clone request refused; `fields` names the inputs at fault."""


def _refuse(field: str, text: str, *, code: str = "invalid", status: int = 400) -> CloneRefused:
    return CloneRefused(f"{field}: {text}", fields={field: [text]}, code=code, status=status)


def create_clone(host: Host, cluster: PgCluster, *, snapshot: str | None = None,
                 name: str = "", ttl: timedelta | None = None,
                 protected_for: timedelta | None = None, role: str = "dev", by=None,
                 trigger: str = Operation.Trigger.API, at: datetime | None = None,
                 lsn: str | None = None, restore_point: str | None = None,
                 link: ReplicationLink | None = None) -> tuple[Clone, Operation, str]:
    """Start making a clone of `cluster` from its snapshot `snapshot` (the part after '@'),
    or from a new one when None, or for a moment (`at`, a time with its zone, `lsn`, or
    a `restore_point` PoZoL made):
    the newest snapshot before it, replayed forward with the archived WAL (apps.wal).
    With `link`, on the link's target host (`host`) to a moment, from the copies the
    link received (`moment_on_target`). Returns the clone, its operation and its
    password."""
    if link is not None:
        _check_link(host, cluster, link)
    elif cluster.host_id != host.pk:
        raise _refuse("cluster", "that cluster is not on this host")
    name = _name(host, name)
    try:
        role = pg_identifier(role)
    except InvalidValue as exc:
        raise _refuse("role", exc.reason) from None
    if role in ("postgres", cluster.owner) or role.startswith("pg_"):
        raise _refuse("role", f"{role} is the cluster's superuser or a built-in role: name "
                              "an application role, or leave the default")
    ttl = _span("ttl", ttl)
    protected_for = _span("protected_for", protected_for)
    if link is not None:
        if snapshot is not None:
            raise _refuse("snapshot", "a clone on a replication target is made to a moment "
                                      "(at, lsn or restore_point), not from a snapshot")
        origin = origin_on_target(link, cluster)
        moment = moment_on_target(link, cluster, name, at=at, lsn=lsn,
                                  restore_point=restore_point)
    else:
        origin = origin_of(host, cluster)
        moment = moment_for(cluster, name, snapshot=snapshot, at=at, lsn=lsn,
                            restore_point=restore_point)
    if moment is not None:
        snapshot, state = moment.snapshot, {}
        _check_snapshot(host, origin, snapshot)
    else:
        snapshot, state = _source_snapshot(host, cluster, origin, snapshot, name)
    password = _password()
    with transaction.atomic():
        # On a link's target too, the clone is a copy of the source cluster's data: its
        # tenant's, within its quotas.
        tenant = tenancy.tenant_of_cluster(cluster.host, cluster.data_dir)
        if tenant is not None:
            tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
            # A tenant's clone always ends: with no TTL asked and no TTL quota, the longest
            # any clone may have (what the tenant's pages promise as "longest TTL").
            ttl = tenancy.check_quota(tenant, ttl, protected_for) or MAX_TTL
        limits = settings_of(host)
        _check_memory(host, limits)
        quota = _quota(limits, tenant)
        room_state = _room(host, origin, quota)
        port = _free_port(host, limits)
        layout = _layout(host, limits, origin, name, snapshot, port, role,
                         moment.recovery if moment else None)
        now = timezone.now()
        clone = Clone(host=host, cluster_data_dir=cluster.data_dir, name=name, link=link,
                      snapshot=snapshot, port=port, role=role,
                      password_encrypted=credentials.encrypt(password),
                      layout=layout.stored(),
                      expires_at=now + ttl if ttl else None,
                      protected_until=now + protected_for if protected_for else None,
                      created_by=by if by and by.is_authenticated else None,
                      tenant=tenant, quota=quota, own_snapshots=_taken(state),
                      target_time=moment.time if moment else None,
                      target_lsn=(lsn or "") if moment else "",
                      target_name=(restore_point or "") if moment else "",
                      archive_timeout=moment.archive_timeout if moment else None)
        try:
            with transaction.atomic():
                clone.save()
        except IntegrityError:
            raise _refuse("name", f"a clone named {name!r} (or port {port}) is taken on "
                                  f"{host.name}; try again", code="conflict",
                          status=409) from None
        operation = engine.start(
            steps.CREATE.name, host=host, trigger=trigger, user=by,
            subject=f"{host.name}: clone {name} of {cluster.data_dir}"[:200],
            state={**state, "clone": clone.pk, "take_snapshot": "plan" in state,
                   "room": room_state})
        clone.last_operation = operation
        clone.save(update_fields=["last_operation"])
    return clone, operation, password


def destroy_clone(clone: Clone, *, by=None, trigger: str = Operation.Trigger.API) -> Operation:
    """Stop the clone's PostgreSQL and destroy its datasets; refused while protected."""
    with transaction.atomic():
        clone = Clone.objects.select_for_update().get(pk=clone.pk)
        if clone.state == Clone.State.DESTROYED:
            raise Conflict(f"clone {clone.name} is destroyed already", code="destroyed")
        if clone.protected:
            raise Conflict(f"clone {clone.name} is protected until "
                           f"{clone.protected_until:%Y-%m-%d %H:%M} UTC", code="protected")
        if _running(clone):
            raise Conflict(f"clone {clone.name} is busy (operation #{_running(clone).pk})",
                           code="busy")
        clone.state = Clone.State.DESTROYING
        operation = engine.start(steps.DESTROY.name, host=clone.host, trigger=trigger, user=by,
                                 subject=f"{clone.host.name}: destroy clone {clone.name}",
                                 state={"clone": clone.pk})
        clone.last_operation = operation
        clone.save(update_fields=["state", "last_operation"])
    return operation


def reset_clone(clone: Clone, *, snapshot: str | None = None, by=None,
                trigger: str = Operation.Trigger.API) -> Operation:
    """Make the clone again from `snapshot` (a label of the origin cluster's), or from a
    new one when None, keeping its name, port, role and password. A clone on a link's
    target is made again to the newest moment the target holds (_reset_on_target)."""
    with transaction.atomic():
        clone = Clone.objects.select_for_update().select_related("host").get(pk=clone.pk)
        _check_resettable(clone)
        if clone.on_target:
            return _reset_on_target(clone, snapshot, by, trigger)
        host = clone.host
        cluster = host.clusters.filter(data_dir=clone.cluster_data_dir).select_related(
            "data_dataset", "wal_dataset").first()
        if cluster is None:
            raise _refuse("cluster", f"no cluster at {clone.cluster_data_dir} on {host.name} "
                                     "any more (run discovery)")
        origin = origin_of(host, cluster)
        snapshot, state = _source_snapshot(host, cluster, origin, snapshot, clone.name)
        if clone.quota is None:  # made before clones had quotas: the fresh copy gets one
            clone.quota = settings_of(host).clone_quota
        room_state = _room(host, origin, clone.quota)
        operation = engine.start(
            steps.RESET.name, host=host, trigger=trigger, user=by,
            subject=f"{host.name}: reset clone {clone.name} to @{snapshot}"[:200],
            state={**state, "clone": clone.pk, "take_snapshot": "plan" in state,
                   "new_snapshot": snapshot, "room": room_state,
                   "own_snapshots": _taken(state)})
        clone.state, clone.last_operation = Clone.State.RESETTING, operation
        clone.save(update_fields=["state", "last_operation", "quota"])
    return operation


def _check_resettable(clone: Clone) -> None:
    if clone.state not in (Clone.State.READY, Clone.State.FAILED):
        raise Conflict(f"clone {clone.name} is {clone.state}: it can be reset when ready "
                       "or failed", code=clone.state)
    if _running(clone):
        raise Conflict(f"clone {clone.name} is busy", code="busy")


def _reset_on_target(clone: Clone, snapshot: str | None, by, trigger: str) -> Operation:
    """A clone on a link's target made again, with its name, port, role and password, to
    the newest moment the target's copies reach now (the end of its window): the
    received snapshot before it, replayed with the carried archive, as when it was made.
    Never from a snapshot taken there: the target's datasets are the link's."""
    if snapshot is not None:
        raise _refuse("snapshot", "a clone on a replication target is reset to the newest "
                                  "moment the target holds, not from a snapshot")
    link = clone.link
    if link is None:
        raise Conflict(f"clone {clone.name} was made from the copies of a link that is "
                       "gone: destroy it", code="no_link")
    cluster = _source_cluster(link)
    copy = _target_copy(link)
    if not copy.spans:
        raise Conflict(f"link {link.name}'s target holds no moment: {copy.note}",
                       code="no_moment")
    newest = copy.spans[-1][1]
    origin = origin_on_target(link, cluster)
    # The base is the one the window's end is reached from; the replay then runs to the
    # archive's end, not to a time (one at its last transaction would need a later one).
    moment = moment_on_target(link, cluster, clone.name, at=newest)
    _check_snapshot(clone.host, origin, moment.snapshot)
    limits = settings_of(clone.host)
    room_state = _room(clone.host, origin, clone.quota or limits.clone_quota)
    layout = _layout(clone.host, limits, origin, clone.name, moment.snapshot, clone.port,
                     clone.role, replace(moment.recovery, target=LATEST, value=LATEST))
    operation = engine.start(
        steps.RESET.name, host=clone.host, trigger=trigger, user=by,
        subject=f"{clone.host.name}: reset clone {clone.name} to {newest:%Y-%m-%d %H:%M:%S}"
                f" UTC"[:200],
        state={"clone": clone.pk, "take_snapshot": False, "new_snapshot": moment.snapshot,
               "room": room_state, "own_snapshots": [], "layout": layout.stored(),
               "target_time": newest.isoformat()})
    clone.state, clone.last_operation = Clone.State.RESETTING, operation
    clone.save(update_fields=["state", "last_operation"])
    return operation


def expire(now=None) -> list[Operation]:
    """Destroy the clones whose time is up (beat), unless protected."""
    now = now or timezone.now()
    started = []
    for clone in Clone.objects.filter(expires_at__lte=now, state__in=(
            Clone.State.READY, Clone.State.FAILED)):
        try:
            started.append(destroy_clone(clone, trigger=Operation.Trigger.SCHEDULE))
        except Conflict:
            continue
    return started


BUSY = (Clone.State.CREATING, Clone.State.RESETTING, Clone.State.DESTROYING)


def settle_interrupted() -> list[Clone]:
    """Fail the clones whose operation ended without its step saying how (cancelled, past
    its deadline, out of attempts after its workers died), with the operation's words.
    Otherwise such a clone stays "destroying" (or "creating") for good: expiry and idle
    deletion take only ready or failed clones, and a failed one can be destroyed again."""
    settled = []
    for clone in Clone.objects.filter(state__in=BUSY).exclude(
            last_operation__status__in=Operation.ACTIVE).select_related("last_operation"):
        operation = clone.last_operation
        why = (f"its operation #{operation.pk} ({operation.kind}) ended {operation.status}: "
               f"{operation.error}" if operation else "its operation is gone")
        # Only if nothing started another operation for it meanwhile.
        if Clone.objects.filter(pk=clone.pk, state=clone.state,
                                last_operation=operation).update(state=Clone.State.FAILED,
                                                                 error=why[-4000:]):
            steps.CLONE_FAILED.emit(steps.event_subject(clone), host=clone.host_id,
                                    error=why[-1000:],
                                    operation=operation.pk if operation else None)
            settled.append(clone)
    return settled


def _running(clone: Clone) -> Operation | None:
    return Operation.objects.filter(status__in=Operation.ACTIVE, state__clone=clone.pk,
                                    kind__startswith="clones.").first()


# ---- checks -------------------------------------------------------------------------------

def _name(host: Host, name: str) -> str:
    if not name:
        name = f"clone-{secrets.token_hex(3)}"
    try:
        name = clone_name(name)
    except CloneError as exc:
        raise _refuse("name", str(exc)) from None
    if name.startswith(RESERVED_PREFIX):
        raise _refuse("name", f"names starting with {RESERVED_PREFIX!r} are PoZoL's own "
                              "(restore drills)")
    return name


def _span(field: str, value: timedelta | None) -> timedelta | None:
    if value is None:
        return None
    if not isinstance(value, timedelta) or not timedelta(minutes=1) <= value <= MAX_TTL:
        raise _refuse(field, "between one minute and 30 days")
    return value


def origin_of(host: Host, cluster: PgCluster, *, running: bool = True) -> Origin:
    """What a clone of `cluster` is made from; `running`: refused while the cluster is
    down (a copy on a replication target does not need it up)."""
    if running and cluster.down_reason:
        raise _refuse("cluster", f"your cluster is down: {cluster.down_reason}; it can be "
                                 "cloned again once it runs", code="cluster_down", status=409)
    if cluster.data_dataset is None:
        raise _refuse("cluster", f"{cluster.data_dir} is not on a ZFS dataset")
    inside = cluster.data_dir.rstrip("/") + "/"
    config, hba, ident = (getattr(cluster, name) or (cluster.setting(name) or {}).get("setting")
                          or "" for name in ("config_file", "hba_file", "ident_file"))
    outside = {name: path for name, path in (("config", config), ("hba", hba), ("ident", ident))
               if path and not path.startswith(inside)}
    wal = cluster.wal_dataset
    separate = wal is not None and wal.pk != cluster.data_dataset.pk
    try:
        return Origin(data_dataset=cluster.data_dataset.name,
                      data_mountpoint=cluster.data_dataset.mountpoint,
                      data_dir=cluster.data_dir,
                      wal_dataset=wal.name if separate else None,
                      wal_mountpoint=wal.mountpoint if separate else None,
                      wal_dir=cluster.wal_dir if separate else None,
                      owner=cluster.owner or "postgres",
                      bin_dir=cluster.bin_dir or "/usr/lib/postgresql/15/bin",
                      server_version_num=cluster.server_version_num,
                      external_config=bool(outside), config_file=outside.get("config"),
                      ident_file=outside.get("ident"))
    except (CloneError, InvalidValue) as exc:
        raise _refuse("cluster", str(exc)) from None


def _source_snapshot(host: Host, cluster: PgCluster, origin: Origin, snapshot: str | None,
                     name: str) -> tuple[str, dict]:
    """The snapshot a clone is made from, checked in the inventory; None: the name and
    the step state of one to take first, with snapshot now's own plan."""
    if snapshot is not None:
        _check_snapshot(host, origin, snapshot)
        return snapshot, {}
    plan, state = snapshot_services.plan_target(host, cluster=cluster)
    snapshot = naming.snapshot_name(timezone.now())
    state.update(plan=asdict(plan), snapshot=snapshot, hold=False, checkpoint=False,
                 properties={"pozol:owner": snapshot_services.OWNER,
                             "pozol:policy": naming.MANUAL, "pozol:label": f"for clone {name}"})
    return snapshot, state


def _taken(state: dict) -> list[str]:
    """The snapshots a "now" plan in `state` takes (its covered datasets), full names."""
    if "plan" not in state:
        return []
    return [f"{dataset}@{state['snapshot']}" for dataset in state["plan"]["covered"]]


def _check_snapshot(host: Host, origin: Origin, snapshot: object) -> None:
    if not isinstance(snapshot, str) or not snapshot or "@" in snapshot or "/" in snapshot:
        raise _refuse("snapshot", "the part after '@' of a snapshot of the cluster")
    datasets = [origin.data_dataset] + ([origin.wal_dataset] if origin.wal_dataset else [])
    found = set(Snapshot.objects.filter(host=host, dataset__in=datasets, name=snapshot)
                .values_list("dataset", flat=True))
    missing = [d for d in datasets if d not in found]
    if missing:
        raise _refuse("snapshot", f"{missing[0]}@{snapshot} is not in the inventory: a clone "
                                  "needs the same snapshot of data and WAL")


def _check_memory(host: Host, limits: CloneHostSettings) -> None:
    if limits.memory_limit is None:
        return
    live = Clone.objects.select_for_update().filter(host=host).exclude(
        state=Clone.State.DESTROYED).count()
    needed = (live + 1) * CLONE_MEMORY
    if needed > limits.memory_limit:
        raise _refuse("host", f"{host.name} would need {needed // 2**20} MiB for {live + 1} "
                              f"clones (each up to {CLONE_MEMORY // 2**20} MiB), over its "
                              f"limit of {limits.memory_limit // 2**20} MiB",
                      code="memory_limit", status=409)


def _quota(limits: CloneHostSettings, tenant: Tenant | None) -> int:
    """The new clone's ZFS quota: the host's per-clone quota, or what its tenant's clone
    space leaves when that is less (refused when it leaves too little to start)."""
    quota = limits.clone_quota
    if tenant is None or tenant.max_clone_space is None:
        return quota
    left = tenant.max_clone_space - tenancy.usage(tenant)["space"]
    if left < MIN_CLONE_QUOTA:
        raise tenancy.OverQuota(
            f"quota: {tenant.name}'s clone space leaves {max(left, 0) // 2**20} MiB, less "
            f"than a clone needs to start ({MIN_CLONE_QUOTA // 2**20} MiB); destroy or "
            "reset one first", fields={"quota": [f"space left: {max(left, 0)} bytes"]})
    return min(quota, left)


def _room(host: Host, origin: Origin, quota: int) -> dict:
    """Refused (409, the figures) when the clone's first writes would take its pool
    below the reserve, as discovery last read it; else the check the step repeats."""
    pools = origin.pools
    needed = min(quota, CLONE_FIRST_WRITES)
    shortage = reserves.first_refusal(host, pools, needed, "a clone")
    if shortage:
        raise _refuse("cluster", shortage.message, code="no_room", status=409)
    return reserves.room_state(pools, needed, "a clone")


# Apps that run clones of their own on a host's clone range (restore drills and table
# recoveries, from the top of the range down) add here, from their AppConfig.ready(),
# what their running ones hold: they build on clones, so clones cannot import them.
PORT_HOLDERS: list[Callable[[Host], set[int]]] = []


def ports_in_use(host: Host) -> set[int]:
    """The ports of `host` that a clone, a discovered cluster or a PORT_HOLDERS' clone
    holds: a new clone or drill takes none of them."""
    taken = set(Clone.objects.filter(host=host).exclude(state=Clone.State.DESTROYED)
                .values_list("port", flat=True))
    taken |= {c.port for c in host.clusters.all() if c.port}
    for held_by in PORT_HOLDERS:
        taken |= held_by(host)
    return taken


def _free_port(host: Host, limits: CloneHostSettings) -> int:
    """A clone's port: from the bottom of the host's clone range up."""
    taken = ports_in_use(host)
    for port in range(limits.port_min, limits.port_max + 1):
        if port not in taken:
            return port
    raise _refuse("port", f"every port of {host.name}'s clone range {limits.port_min}-"
                          f"{limits.port_max} is taken", code="no_port", status=409)


@dataclass(frozen=True)
class Moment:
    """What a clone to a moment is made from: the snapshot apps.wal chose, and the replay."""

    snapshot: str
    recovery: Recovery
    archive_timeout: int
    time: datetime | None  # the moment asked, or the restore point's


def moment_for(cluster: PgCluster, name: str, *, snapshot: str | None = None,
               at: datetime | None = None, lsn: str | None = None,
               restore_point: str | None = None) -> Moment | None:
    """For a clone named `name` to a moment: the snapshot apps.wal chooses and the
    replay's settings; None for a clone of a snapshot. Refused (400, the window in the
    message) when the archive does not reach the moment. A drill's and a table
    recovery's clones (apps.drills) ask it too."""
    asked = [x for x in (at, lsn, restore_point) if x is not None]
    if not asked:
        return None
    if snapshot is not None or len(asked) > 1:
        raise _refuse("at", "ask for one of a snapshot, a moment (at), an LSN (lsn) or a "
                            "restore point (restore_point)")
    try:
        choice, archive = wal_services.choose(cluster, at=at, lsn=lsn,
                                              restore_point=restore_point)
    except DomainError as exc:
        raise CloneRefused(str(exc), fields=exc.fields, code=exc.code,
                           status=exc.status) from None
    if at is not None:
        target, value = "time", at.isoformat()
    elif lsn is not None:
        target, value = "lsn", format_lsn(parse_lsn(lsn))
    else:
        target, value = "name", restore_point
    try:
        recovery = Recovery(archive=archive.dataset, label=f"{PITR_PREFIX}{name}",
                            target=target, value=value)
    except CloneError as exc:
        raise _refuse(exc.field, str(exc)) from None
    time = datetime.fromtimestamp(choice.moment, UTC) if choice.moment is not None else None
    return Moment(choice.reach.base.label, recovery, archive.archive_timeout, time)


# ---- on a replication target --------------------------------------------------------------
# A link's target holds received copies of the cluster's snapshots and (issue 23) a copy
# of its WAL archive as the link's last run carried it. A clone there is made from those
# as on the source, with two differences: the archive's snapshot is the link's (cloned
# for the replay, never taken nor destroyed: apps.clones.core.layout.Recovery.received),
# and the cluster's configuration files outside its data directory stay on the source.
# The clone holds its received snapshot as any clone does (the target's keep rules skip a
# snapshot with clones, and the link receives without -F, so a clone neither blocks the
# next receive nor is rolled back); while it replays, the link keeps the archive snapshot
# it reads (apps.replication.readers asks `replaying`).


def _check_link(host: Host, cluster: PgCluster, link: ReplicationLink) -> None:
    if host.pk != link.target_host_id:
        raise _refuse("host", f"a clone on link {link.name}'s target is made on "
                              f"{link.target_host.name}, not on {host.name}")
    if cluster.host_id != link.source_host_id or cluster.data_dir != link.cluster_data_dir:
        raise _refuse("link", f"link {link.name} copies {link.cluster_data_dir} of "
                              f"{link.source_host.name}, not that cluster")


def origin_on_target(link: ReplicationLink, cluster: PgCluster) -> Origin:
    """The source cluster's origin with its datasets as the link's target holds them.
    The source may be down: its copy is what a clone on the target is for."""
    origin = origin_of(link.source_host, cluster, running=False)
    targets = _link_targets(link)
    try:
        # The origin's configuration files are on the source host, not on the target.
        return Origin(**{**origin.__dict__, "config_file": None, "ident_file": None,
                         "data_dataset": targets[origin.data_dataset],
                         "wal_dataset": (targets[origin.wal_dataset] if origin.wal_dataset
                                         else None)})
    except KeyError as exc:
        raise _refuse("link", f"link {link.name} does not copy {exc.args[0]}") from None
    except (CloneError, InvalidValue) as exc:
        raise _refuse("link", str(exc)) from None


def moment_on_target(link: ReplicationLink, cluster: PgCluster, name: str, *,
                     at: datetime | None = None, lsn: str | None = None,
                     restore_point: str | None = None) -> Moment:
    """The received snapshot and the carried archive's received snapshot that reach a
    moment on the link's target (apps.wal.copies), and the replay's settings; refused
    (4xx, the target's window in the message) as moment_for refuses on the source. A
    drill on the target (apps.drills) asks it too."""
    asked = [x for x in (at, lsn, restore_point) if x is not None]
    if len(asked) != 1:
        raise _refuse("at", "ask for one of a moment (at), an LSN (lsn) or a restore point "
                            "(restore_point)")
    archive = wal_services.archive_of(cluster)
    core = _link_core(link)
    if archive is None or not (core.archive and link.archive_snapshot):
        raise _refuse("target", f"link {link.name} has not carried the WAL archive of "
                                f"{link.cluster_data_dir} yet: run it once archiving is on",
                      code="not_carried", status=409)
    copy = _copy(link, cluster, core, archive)
    try:
        point = (wal_services.restore_point_named(archive, restore_point)
                 if restore_point is not None else None)
        choice = copies.choose(copy, at, lsn=lsn, point=point)
    except DomainError as exc:
        raise CloneRefused(str(exc), fields=exc.fields, code=exc.code,
                           status=exc.status) from None
    if at is not None:
        target, value, time = "time", at.isoformat(), at
    elif lsn is not None:
        target, value, time = "lsn", format_lsn(parse_lsn(lsn)), None
    else:
        target, value, time = "name", restore_point, point.created_at
    try:
        recovery = Recovery(archive=copy.archive, label=copy.snapshot, target=target,
                            value=value, received=True)
    except CloneError as exc:
        raise _refuse(exc.field, str(exc)) from None
    return Moment(choice.reach.base.label, recovery, archive.archive_timeout, time)


def create_on_target(link: ReplicationLink, **request) -> tuple[Clone, Operation, str]:
    """A clone of the link's source cluster on its target host, to a moment (`at`,
    `lsn` or `restore_point` in `request`, with create_clone's other arguments): the
    operator's form on the target's Clones tab, which names the link, not the cluster."""
    return create_clone(link.target_host, _source_cluster(link), link=link, **request)


@dataclass(frozen=True)
class TargetCopy:
    """A link into a host that carries its cluster's WAL archive, and the moments a clone
    there can be made for: the target's window as its inventory is now (`spans`, oldest
    first), or why none (`note`)."""

    link: ReplicationLink
    spans: list[tuple[datetime, datetime]]
    note: str = ""


def copies_on(host: Host) -> list[TargetCopy]:
    """The links whose target is `host` and that carry an archive, each with the window a
    clone to a moment has there (apps.wal.copies.Copy.window); reads no host."""
    links = (ReplicationLink.objects.filter(target_host=host).exclude(archive="")
             .select_related("source_host", "target_host").order_by("name"))
    return [_target_copy(link) for link in links]


def _target_copy(link: ReplicationLink) -> TargetCopy:
    try:
        cluster = _source_cluster(link)
        archive = wal_services.archive_of(cluster)
        core = _link_core(link)
        if archive is None or not (core.archive and link.archive_snapshot):
            return TargetCopy(link, [], "the link has not carried the WAL archive yet: run "
                                        "it once archiving is on")
        spans = _copy(link, cluster, core, archive).window()
    except DomainError as exc:
        return TargetCopy(link, [], exc.message)
    if not spans:
        return TargetCopy(link, [], "no moment yet: a received snapshot is needed, then "
                                    "WAL archived after it and carried")
    return TargetCopy(link, [(datetime.fromtimestamp(s.since, UTC),
                              datetime.fromtimestamp(s.until, UTC)) for s in spans])


def _source_cluster(link: ReplicationLink) -> PgCluster:
    cluster = (PgCluster.objects.filter(host_id=link.source_host_id,
                                        data_dir=link.cluster_data_dir)
               .select_related("host", "data_dataset", "wal_dataset").first()
               if link.cluster_data_dir else None)
    if cluster is None:
        raise _refuse("link", f"link {link.name} copies no cluster discovery knows on "
                              f"{link.source_host.name}")
    return cluster


def replaying(host: Host, archive_copy: str) -> set[str]:
    """The snapshots of the archive's copy on `host` that a clone being made there
    replays from (apps.replication.readers): each is cloned when its script runs, so
    it must stay until then."""
    making = Clone.objects.filter(host=host, state=Clone.State.CREATING,
                                  layout__recovery__archive=archive_copy)
    # A reset on a target keeps its new layout in its operation's state until it runs.
    resetting = Operation.objects.filter(host=host, kind=steps.RESET.name,
                                         status__in=Operation.ACTIVE,
                                         state__layout__recovery__archive=archive_copy)
    return {found for found in [*making.values_list("layout__recovery__label", flat=True),
                                *resetting.values_list("state__layout__recovery__label",
                                                       flat=True)] if found}


def _link_core(link: ReplicationLink):
    try:
        return core_link(link)
    except DomainError as exc:
        raise _refuse("link", str(exc)) from None


def _link_targets(link: ReplicationLink) -> dict[str, str]:
    return _link_core(link).targets()


def _copy(link: ReplicationLink, cluster: PgCluster, core, archive) -> copies.Copy:
    targets = core.targets()
    data = targets.get(cluster.data_dataset.name) if cluster.data_dataset_id else None
    if data is None:
        raise _refuse("link", f"link {link.name} does not copy the data dataset of "
                              f"{cluster.data_dir}", code="conflict", status=409)
    wal = (targets.get(cluster.wal_dataset.name) if cluster.wal_dataset_id
           and cluster.wal_dataset_id != cluster.data_dataset_id else None)
    marks = dict(archive.marks.values_list("snapshot", "lsn"))
    return copies.Copy(link.target_host_id, data, wal, core.archive_target,
                       link.archive_snapshot, link.archive_listing, link.archive_floor,
                       marks=marks, segment_size=archive.segment_size or DEFAULT_SEGMENT_SIZE)


def _layout(host: Host, limits: CloneHostSettings, origin: Origin, name: str, snapshot: str,
            port: int, role: str, recovery: Recovery | None = None) -> Layout:
    listen = limits.listen_address or host.address
    if not _is_ip(listen):
        # A host registered by name (demo-host in docker-compose.yml): which of its
        # addresses clients should reach is the operator's to say.
        raise _refuse("listen_address", f"clones listen on an IP address, and {host.name}'s "
                      f"address {host.address!r} is a name: set the address its clones listen "
                      f"on in its clone settings (listen_address)")
    allowed = tuple(limits.allowed_networks or CloneHostSettings.DEFAULT_ALLOWED)
    socket_dir = f"{host.work_dir.rstrip('/')}/clones/{name}"
    try:
        return Layout(origin=origin, name=name, snapshot=snapshot, port=port, listen=listen,
                      allowed=allowed, role=role, socket_dir=socket_dir,
                      os_uid=clone_uid(limits.uid_base, port), recovery=recovery)
    except (CloneError, InvalidValue, ValueError) as exc:
        raise _refuse(getattr(exc, "field", "layout"), str(exc)) from None


def _is_ip(address: str) -> bool:
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True


def _password() -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(PASSWORD_LENGTH))


def minutes(value: int | None) -> timedelta | None:
    """A span given in whole minutes (the API and the form), or None."""
    return timedelta(minutes=value) if value is not None else None


# ---- the operator's settings per host -----------------------------------------------------

PORT_FLOOR, PORT_CEILING = 1024, 65535
MAX_NETWORKS = 64


def settings_of(host: Host) -> CloneHostSettings:
    """The host's clone settings, or the defaults (unsaved) when the operator set none."""
    return (CloneHostSettings.objects.filter(host=host).first()
            or CloneHostSettings(host=host, allowed_networks=[]))


MAX_MEMORY_LIMIT = 64 * 2**40  # no host has this much RAM: a typo
MAX_CLONE_QUOTA = 2**60


def update_settings(host: Host, *, port_min: int, port_max: int, listen_address: str | None,
                    allowed_networks: list[str], memory_limit: int | None = None,
                    uid_base: int | None = None,
                    clone_quota: int = DEFAULT_CLONE_QUOTA, by=None) -> CloneHostSettings:
    """Save what the operator allows clones on `host`. Clones made before keep their port
    and pg_hba; the next clone gets the new values."""
    for field, port in (("port_min", port_min), ("port_max", port_max)):
        if not whole_in(port, PORT_FLOOR, PORT_CEILING):
            raise _refuse(field, f"a port from {PORT_FLOOR} to {PORT_CEILING}")
    if port_min > port_max:
        raise _refuse("port_max", f"at least port_min ({port_min})")
    listen_address = _address(listen_address)
    networks = _networks(allowed_networks)
    if memory_limit is not None and not whole_in(memory_limit, CLONE_MEMORY, MAX_MEMORY_LIMIT):
        raise _refuse("memory_limit", f"bytes, from one clone's {CLONE_MEMORY} to "
                                      f"{MAX_MEMORY_LIMIT}, or empty for no limit")
    if uid_base is not None and not whole_in(uid_base, UID_BASE_MIN, UID_BASE_MAX):
        raise _refuse("uid_base", f"from {UID_BASE_MIN} to {UID_BASE_MAX}: a clone's uid is "
                                  "this plus its port")
    if not whole_in(clone_quota, MIN_CLONE_QUOTA, MAX_CLONE_QUOTA):
        raise _refuse("clone_quota", f"bytes, from {MIN_CLONE_QUOTA} (room to start) to "
                                     f"{MAX_CLONE_QUOTA}")
    limits = settings_of(host)
    if uid_base is not None:
        limits.uid_base = uid_base
    limits.memory_limit, limits.clone_quota = memory_limit, clone_quota
    limits.port_min, limits.port_max = port_min, port_max
    limits.listen_address, limits.allowed_networks = listen_address, networks
    limits.save()
    return limits


def _address(value: object) -> str | None:
    if value in (None, ""):
        return None
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise _refuse("listen_address", f"an IPv4 or IPv6 address, not {value!r}") from None


def _networks(values: object) -> list[str]:
    if not isinstance(values, list | tuple) or len(values) > MAX_NETWORKS:
        raise _refuse("allowed_networks", f"a list of at most {MAX_NETWORKS} CIDRs")
    networks = []
    for value in values:
        if not isinstance(value, str) or "/" not in value:
            raise _refuse("allowed_networks", f"a CIDR such as 10.0.0.0/8, not {value!r}")
        try:
            network = ipaddress.ip_network(value)
        except ValueError:
            # A host address with a prefix (10.1.2.3/8) is most likely a typo for either
            # its network or the host alone: ask rather than guess which.
            raise _refuse("allowed_networks", _cidr_hint(value)) from None
        if str(network) not in networks:
            networks.append(str(network))
    return networks


def _cidr_hint(value: str) -> str:
    try:
        loose = ipaddress.ip_network(value, strict=False)
    except ValueError:
        return f"a CIDR such as 10.0.0.0/8, not {value!r}"
    address = value.split("/")[0]
    return (f"{value} has host bits set: write {loose} for the network, or "
            f"{address}/{loose.max_prefixlen} for that address alone")
