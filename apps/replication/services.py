"""What the UI, the API and the scheduler ask of replication links.

None opens SSH. Making or changing a link checks every value against the pure
core (apps.replication.core.link, the snapshot policy's count rules) and the
inventory before anything is saved; running one starts a `replication.run`
Operation on the source host (apps.replication.steps). A refusal is a
LinkError naming the field at fault, or a Conflict (409) for state.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.common.errors import Conflict, DomainError
from apps.common.numbers import whole_in
from apps.fleet import reserves
from apps.fleet.models import Host
from apps.ops import engine
from apps.ops.models import Operation
from apps.ops.schedule import due
from apps.replication import link_rows, steps
from apps.replication.alert_kinds import REPLICATION_LAG
from apps.replication.core import lag as core_lag
from apps.replication.core import streams
from apps.replication.core.capabilities import stream_refusal
from apps.replication.core.link import Link, ReplicationError
from apps.replication.core.planner import Snap
from apps.replication.core.streams import Encryption, StreamFlags
from apps.replication.link_rows import LinkError, core_link
from apps.replication.models import ReplicationLink
from apps.snapshots import services as snapshot_services
from apps.snapshots.core.policy import Policy, PolicyError

MAX_INTERVAL_MINUTES = 366 * 24 * 60
EDITABLE = ("mode", "interval_minutes", "after_policy", *ReplicationLink.KEEP_COUNTS,
            "bandwidth_limit", "lag_threshold_minutes", "compressed_streams",
            "large_block_streams")


def _refuse(field: str, text: str, *, code: str = "invalid", status: int = 400) -> LinkError:
    return LinkError(f"{field}: {text}", fields={field: [text]}, code=code, status=status)


# ---- making and changing links -------------------------------------------------------

@transaction.atomic
def create_link(*, name: str, source_host: Host, target_host: Host, target_parent: str,
                cluster_data_dir: str = "", dataset: str = "", by=None,
                **settings) -> ReplicationLink:
    """Record a link from a cluster (by data directory) or a dataset of `source_host` to
    `target_parent` on `target_host`. `settings`: any of EDITABLE."""
    _unknown(settings)
    if source_host.pk == target_host.pk:
        raise _refuse("target_host", "the target must be another host than the source")
    sources = _sources(source_host, cluster_data_dir, dataset)
    link = ReplicationLink(name=name, source_host=source_host, target_host=target_host,
                           target_parent=target_parent, cluster_data_dir=cluster_data_dir,
                           sources=list(sources),
                           created_by=by if by and by.is_authenticated else None)
    _apply(link, settings)
    core = core_link(link)
    # The name first: a second request for the same link would otherwise read as a
    # clash of targets with itself.
    if ReplicationLink.objects.filter(name=name).exists():
        raise _refuse("name", f"a link named {name!r} exists already", code="conflict",
                      status=409)
    _check_target(link, core, target_host)
    _check_streams(source_host, target_host)
    try:
        with transaction.atomic():
            link.save()
    except IntegrityError:
        raise _refuse("name", f"a link named {name!r} exists already", code="conflict",
                      status=409) from None
    return link


@transaction.atomic
def update_link(link: ReplicationLink, changes: dict, by=None) -> ReplicationLink:
    """Change what may change; name, hosts, sources and target are the link's identity."""
    fixed = set(changes) & {"name", "source_host", "target_host", "target_parent",
                            "cluster_data_dir", "dataset", "sources"}
    if fixed:
        field = sorted(fixed)[0]
        raise _refuse(field, "cannot be changed once the link exists (make a new link)")
    _unknown(changes)
    link = ReplicationLink.objects.select_for_update().get(pk=link.pk)
    _large_blocks_fixed(link, changes)
    _apply(link, changes)
    core_link(link)
    link.save()
    return link


def _large_blocks_fixed(link: ReplicationLink, changes: dict) -> None:
    """-L cannot change once the link has sent (core/streams.py): its copies hold the
    block sizes its first send gave them, and an incremental must match. Asking for what
    the link sends anyway is no change."""
    wanted = changes.get("large_block_streams", link.large_block_streams)
    if link.large_blocks_sent is None or wanted in (link.large_block_streams,
                                                    link.large_blocks_sent):
        return
    raise _refuse("large_block_streams",
                  f"fixed once the link has sent: its copies were received "
                  f"{'with' if link.large_blocks_sent else 'without'} -L, and an incremental "
                  "must match (OpenZFS 2.0+ refuses one that drops -L onto large blocks; "
                  "before 2.0 a change either way zeroed data). Make a new link into "
                  "another target parent to change it", code="fixed", status=409)


def _unknown(values: dict) -> None:
    unknown = sorted(set(values) - set(EDITABLE))
    if unknown:
        raise _refuse(unknown[0], "not a setting of a link")


def _apply(link: ReplicationLink, values: dict) -> None:
    for field, value in values.items():
        setattr(link, field, value)
    interval = link.interval_minutes
    if not whole_in(interval, 0, MAX_INTERVAL_MINUTES):
        raise _refuse("interval_minutes", f"a whole number of minutes from 0 (on demand) to "
                                          f"{MAX_INTERVAL_MINUTES}")
    threshold = link.lag_threshold_minutes
    low, high = (int(core_lag.MIN_THRESHOLD.total_seconds() // 60),
                 int(core_lag.MAX_THRESHOLD.total_seconds() // 60))
    if not whole_in(threshold, low, high):
        raise _refuse("lag_threshold_minutes", f"a whole number of minutes from {low} to {high}")
    try:
        Policy(name="link", **link.keep_counts())
    except PolicyError as exc:
        raise _refuse(f"keep_{exc.field}", str(exc)) from None
    _limit_applies(link)


LIMITERS = ("pv", "mbuffer")


def _limit_applies(link: ReplicationLink) -> None:
    """A bandwidth limit the source cannot apply is refused, not saved and ignored: the
    limiter is pv or mbuffer on the source (core.commands). Known from discovery's
    `tools`; a host whose tools discovery has not read is not refused here (the plan
    then says the limit cannot be applied)."""
    if not link.bandwidth_limit:
        return
    tools = (link.source_host.facts or {}).get("tools")
    if tools is None or any(name in tools for name in LIMITERS):
        return
    raise _refuse("bandwidth_limit",
                  f"{link.source_host.name} has neither pv nor mbuffer, so no limit can be "
                  f"applied: install one there and run discovery, or leave the limit empty")


def _sources(host: Host, cluster_data_dir: str, dataset: str) -> tuple[str, ...]:
    if bool(cluster_data_dir) == bool(dataset):
        raise LinkError("name a cluster or a dataset (one of them)",
                        fields={"cluster_data_dir": ["or dataset"],
                                "dataset": ["or cluster_data_dir"]})
    if dataset:
        try:
            Link(name="check", sources=(dataset,), target_parent="check")
        except ReplicationError as exc:
            raise _refuse("dataset", str(exc)) from None
        if not host.datasets.filter(name=dataset).exists():
            raise _refuse("dataset", f"{dataset} is not a dataset of {host.name} (run "
                                     "discovery)")
        return (dataset,)
    cluster = host.clusters.filter(data_dir=cluster_data_dir).select_related(
        "data_dataset", "wal_dataset").first()
    if cluster is None:
        raise _refuse("cluster_data_dir", f"no cluster at {cluster_data_dir!r} on {host.name}")
    try:  # the same checks as a cluster's snapshot: data and WAL both on ZFS
        chosen, _ = snapshot_services.plan_target(host, cluster=cluster)
    except DomainError as exc:
        raise _refuse("cluster_data_dir", exc.message.removeprefix("cluster: ")) from None
    return tuple(chosen.datasets)


def _check_target(link: ReplicationLink, core: Link, target_host: Host) -> None:
    pool = link.target_parent.split("/")[0]
    if not target_host.pools.filter(name=pool).exists():
        raise _refuse("target_parent", f"{target_host.name} has no pool {pool!r} (run "
                                       "discovery)")
    mine = set(core.targets().values())
    others = ReplicationLink.objects.filter(target_host=target_host).exclude(pk=link.pk)
    for other in others:
        theirs = set(core_link(other).targets().values())
        clash = sorted(a for a in mine for b in theirs
                       if a == b or a.startswith(b + "/") or b.startswith(a + "/"))
        if clash:
            raise _refuse("target_parent", f"link {other.name} already receives into "
                                           f"{clash[0]}: two links into one target would "
                                           "destroy each other's history",
                          code="conflict", status=409)


def _check_streams(source_host: Host, target_host: Host) -> None:
    """A pair of hosts whose ZFS cannot exchange streams is refused when the link is made,
    not halfway through its first send (hosts discovery has not read pass here; their
    plan refuses)."""
    try:
        source = link_rows.capabilities_of(source_host)
        target = link_rows.capabilities_of(target_host)
    except link_rows.LinkFailure:
        return
    if refusal := stream_refusal(source, target):
        raise _refuse("target_host", refusal)


def streams_of(link: ReplicationLink) -> list[tuple[str, StreamFlags]]:
    """Each source dataset's stream flags and why, from what PoZoL knows without asking
    the hosts: both hosts' capabilities (discovery), the link's opt-outs and the -L it
    first sent with, and each dataset's `encryption` as the last run read it (before a
    run: "-w at each run"). A run decides again from the hosts and logs it. A Conflict
    when discovery has not read a host."""
    try:
        source = link_rows.capabilities_of(link.source_host)
        target = link_rows.capabilities_of(link.target_host)
    except link_rows.LinkFailure as exc:
        raise Conflict(str(exc), code="no_facts") from None
    core = core_link(link)
    known = link.source_encryption or {}
    return [(dataset, streams.decide(core, source, target,
                                     Encryption(known[dataset]) if dataset in known else None))
            for dataset in core.sources]


# ---- running, pausing, rollback opt-in ------------------------------------------------

def run_now(link: ReplicationLink, *, by=None,
            trigger: str = Operation.Trigger.API) -> Operation:
    """Start one run of the link (plan, transfer, prune the target); 409 while one runs."""
    with transaction.atomic():
        link = ReplicationLink.objects.select_for_update().get(pk=link.pk)
        running = active_run(link)
        if running is not None:
            raise Conflict(f"link {link.name} is running already (operation #{running.pk})",
                           code="running")
        if link.paused and trigger in (Operation.Trigger.SCHEDULE, Operation.Trigger.SYSTEM):
            raise Conflict(f"link {link.name} is paused", code="paused")
        _check_room(link)
        operation = engine.start(
            steps.RUN.name, host=link.source_host, trigger=trigger, user=by,
            subject=f"replicate {link.name}: {link.source_host.name} -> "
                    f"{link.target_host.name}:{link.target_parent}"[:200],
            state={"link": link.pk})
        link.last_operation = operation
        link.save(update_fields=["last_operation", "updated_at"])
        return operation


def _check_room(link: ReplicationLink) -> None:
    """Refused (409, the figures) when the target pool is at its reserve already, as
    discovery last read it; the run's plan checks again against the sizes it will send."""
    pool = link.target_parent.split("/")[0]
    shortage = reserves.refusal(link.target_host, pool, 0, "a replication receive")
    if shortage:
        raise Conflict(shortage.message, code="no_room")


def active_run(link: ReplicationLink) -> Operation | None:
    return (Operation.objects.filter(status__in=Operation.ACTIVE, kind=steps.RUN.name,
                                     state__link=link.pk)
            .order_by("-pk").first())


def pause(link: ReplicationLink, *, by=None) -> ReplicationLink:
    """Stop scheduled runs (a running transfer finishes); run now still works."""
    return _set(link, paused=True)


def resume(link: ReplicationLink, *, by=None) -> ReplicationLink:
    return _set(link, paused=False)


def opt_in_rollback(link: ReplicationLink, *, by) -> ReplicationLink:
    """Allow runs to roll a diverged target back to the common snapshot (destroying what
    diverged); who and when are recorded and written into each rollback's log."""
    return _set(link, rollback_opt_in=True, rollback_opted_in_at=timezone.now(),
                rollback_opted_in_by=by if by and by.is_authenticated else None)


def opt_out_rollback(link: ReplicationLink, *, by=None) -> ReplicationLink:
    return _set(link, rollback_opt_in=False, rollback_opted_in_at=None,
                rollback_opted_in_by=None)


def _set(link: ReplicationLink, **values) -> ReplicationLink:
    with transaction.atomic():
        link = ReplicationLink.objects.select_for_update().get(pk=link.pk)
        for field, value in values.items():
            setattr(link, field, value)
        link.save(update_fields=[*values, "updated_at"])
    return link


@transaction.atomic
def delete_link(link: ReplicationLink, *, by=None,
                trigger: str = Operation.Trigger.API) -> Operation:
    """Forget the link and start removing what it left on the hosts: its key line on
    the target, its key on the source and its holds. Refused while it runs."""
    link = ReplicationLink.objects.select_for_update().get(pk=link.pk)
    running = active_run(link)
    if running is not None:
        raise Conflict(f"link {link.name} is running (operation #{running.pk}): wait for it "
                       "or cancel it first", code="running")
    operation = engine.start(
        steps.REMOVE.name, host=link.target_host, trigger=trigger, user=by,
        subject=f"remove link {link.name} from {link.target_host.name} and "
                f"{link.source_host.name}"[:200],
        state=steps.removal_state(link))
    link.delete()
    return operation


# ---- the schedule ----------------------------------------------------------------------

def tick(now: datetime | None = None) -> list[Operation]:
    """Start the runs that are due at `now` (interval passed since the last run) and
    raise or resolve lag alerts."""
    now = now or timezone.now()
    started = []
    for link in ReplicationLink.objects.filter(paused=False).select_related(
            "source_host", "target_host"):
        _alert_lag(link, now)
        if link.interval_minutes and due(link.last_run_at,
                                         timedelta(minutes=link.interval_minutes), now):
            try:
                started.append(run_now(link, trigger=Operation.Trigger.SCHEDULE))
            except Conflict as exc:
                _skipped(link, exc)
    return started


def _skipped(link: ReplicationLink, refusal: Conflict) -> None:
    """A scheduled run refused for want of room is recorded, not dropped: the link says
    refused with the figures (and waits its interval, as after a refused run), and a
    failed operation says so in the operations list and the operation_failed alert.
    A run already under way, or a paused link, is no failure."""
    if refusal.code != "no_room":
        return
    error = f"refused: {refusal.message}"
    with transaction.atomic():
        operation = engine.refused(
            steps.RUN.name, host=link.source_host, trigger=Operation.Trigger.SCHEDULE,
            subject=f"replicate {link.name}: {link.source_host.name} -> "
                    f"{link.target_host.name}:{link.target_parent}"[:200],
            state={"link": link.pk}, error=error, code="no_room")
        now = timezone.now()
        ReplicationLink.objects.filter(pk=link.pk).update(
            state=ReplicationLink.State.REFUSED, last_error=f"scheduled run {error}"[:4000],
            last_run_at=now, last_operation=operation, updated_at=now)


def after_policy_snapshot(host: Host, datasets: list[str]) -> list[Operation]:
    """A policy took snapshots of `datasets` on `host`: run the links that wait for it."""
    started = []
    query = Q()
    for dataset in datasets:
        query |= Q(sources__contains=[dataset])
    for link in ReplicationLink.objects.filter(query, source_host=host, after_policy=True,
                                               paused=False):
        try:
            started.append(run_now(link, trigger=Operation.Trigger.SCHEDULE))
        except Conflict as exc:
            _skipped(link, exc)
    return started


# ---- lag -------------------------------------------------------------------------------

def lag_of(link: ReplicationLink, now: datetime | None = None) -> core_lag.Lag:
    now = now or timezone.now()
    newest = None
    if link.newest_received and link.newest_received_at:
        newest = Snap(name=link.newest_received, guid=0, created=link.newest_received_at)
    return core_lag.lag(newest, now, timedelta(minutes=link.lag_threshold_minutes),
                        link_created=link.created_at)


def _alert_lag(link: ReplicationLink, now: datetime) -> None:
    late = [other for other in ReplicationLink.objects.filter(source_host=link.source_host,
                                                              paused=False)
            if lag_of(other, now).alert]
    if late:
        REPLICATION_LAG.raise_or_resolve(link.source_host, "; ".join(
            f"link {other.name}: {lag_of(other, now).text}" for other in late))
    else:
        REPLICATION_LAG.resolve(link.source_host, at=now)
