"""What the UI and the API ask of snapshots: take one now, destroy, hold, release, refresh,
and roll a cluster back to one.

None opens SSH: each checks its input and the inventory, then starts an
Operation (apps.snapshots.steps). Names and labels are checked against the
naming rules before anything is recorded, so a hostile value never reaches
a command; a refusal is a SnapshotError naming the field at fault.
"""

from __future__ import annotations

from dataclasses import asdict

from django.db import transaction
from django.utils import timezone

from apps.common.errors import Conflict, DomainError
from apps.fleet import reserves
from apps.fleet.models import Host, PgCluster
from apps.ops import engine
from apps.ops.models import Operation
from apps.remote import snapshot_plan as plan
from apps.remote.commands import InvalidValue, dataset_name, pool_of
from apps.snapshots import protection, steps
from apps.snapshots.core import commands, guards, naming
from apps.snapshots.core.rollback import Listed, plan_rollback
from apps.snapshots.models import Snapshot

OWNER = "pozol"
SNAPSHOT_ROOM = 0  # bytes a new snapshot needs beyond the pool's reserve


class SnapshotError(DomainError):
    """A snapshot request refused; `fields` names the inputs at fault."""


def _refuse(field: str, text: str, *, code: str = "invalid", status: int = 400) -> SnapshotError:
    return SnapshotError(f"{field}: {text}", fields={field: [text]}, code=code, status=status)


@transaction.atomic
def snapshot_now(host: Host, *, cluster: PgCluster | None = None, dataset: str | None = None,
                 label: str = "", hold: bool = False, checkpoint: bool = False, by=None,
                 trigger: str = Operation.Trigger.API) -> Operation:
    """Start taking one snapshot of a cluster (data and WAL together) or of a dataset."""
    try:
        label = commands.label(label)
    except InvalidValue as exc:
        raise _refuse("label", exc.reason) from None
    if (cluster is None) == (dataset is None):
        raise SnapshotError("name a cluster or a dataset (one of them)",
                            fields={"cluster": ["or dataset"], "dataset": ["or cluster"]})
    if checkpoint and cluster is None:
        raise _refuse("checkpoint", "a CHECKPOINT needs a cluster, not a dataset")
    chosen, state = plan_target(host, cluster=cluster, dataset=dataset, checkpoint=checkpoint)
    # Names are to the second: two requests in one second would name one snapshot, and
    # the second's step would take the first's as its own. The host's row lock makes
    # the check and the new operation one step for concurrent requests.
    Host.objects.select_for_update().filter(pk=host.pk).first()
    state["room"] = room_check(host, chosen, "cluster" if cluster is not None else "dataset")
    name = naming.snapshot_name(timezone.now())
    if (Snapshot.objects.filter(host=host, dataset__in=chosen.covered, name=name).exists()
            or _being_taken(host, name, chosen.covered)):
        raise Conflict(f"a snapshot @{name} exists already: try again in a second")
    properties = {"pozol:owner": OWNER, "pozol:policy": naming.MANUAL}
    if label:
        properties["pozol:label"] = label
    subject = f"{host.name}: snapshot {', '.join(chosen.datasets)} @{name}"
    return engine.start(
        steps.TAKE.name, host=host, subject=subject[:200], trigger=trigger, user=by,
        state={**state, "plan": asdict(chosen), "snapshot": name, "properties": properties,
               "hold": bool(hold), "checkpoint": bool(checkpoint)})


def room_check(host: Host, chosen: plan.SnapshotPlan, field: str) -> dict:
    """Refused (409, the figures) when a pool the snapshot covers is at its reserve as
    discovery last read it; else the check its step repeats on the host. A snapshot
    takes no space at first, but keeps what production overwrites next: none is taken
    on a pool already down to its reserve."""
    pools = [pool_of(dataset) for dataset in chosen.covered]
    shortage = reserves.first_refusal(host, pools, SNAPSHOT_ROOM, "a snapshot")
    if shortage:
        raise _refuse(field, shortage.message, code="no_room", status=409)
    return reserves.room_state(pools, SNAPSHOT_ROOM, "a snapshot")


def _being_taken(host: Host, name: str, covered: tuple[str, ...]) -> bool:
    """Whether an operation not failed (running, or done but not yet in the inventory)
    takes @name of one of `covered` on `host`."""
    others = Operation.objects.filter(host=host, state__snapshot=name).exclude(
        status__in=(Operation.Status.FAILED, Operation.Status.CANCELLED))
    return any(set(covered) & set(((op.state or {}).get("plan") or {}).get("covered") or ())
               for op in others.only("state"))


def plan_target(host: Host, *, cluster: PgCluster | None = None, dataset: str | None = None,
                checkpoint: bool = False) -> tuple[plan.SnapshotPlan, dict]:
    """How a cluster's (or a dataset's) snapshot is taken on `host`, and the step state
    it needs; a SnapshotError when the target cannot be snapshotted."""
    if cluster is not None:
        return _cluster_plan(host, cluster, checkpoint)
    return _dataset_plan(host, dataset)


def _cluster_plan(host: Host, cluster: PgCluster,
                  checkpoint: bool) -> tuple[plan.SnapshotPlan, dict]:
    if cluster.host_id != host.pk:
        raise _refuse("cluster", "that cluster is not on this host")
    if cluster.data_dataset is None:
        raise _refuse("cluster", f"{cluster.data_dir} is not on a ZFS dataset")
    wal_inside = not cluster.wal_dir or cluster.wal_dir.startswith(cluster.data_dir + "/")
    if cluster.wal_dataset is None and not wal_inside:
        raise _refuse("cluster", f"its WAL ({cluster.wal_dir}) is not on a ZFS dataset: a "
                                 "snapshot of the data alone would not be consistent")
    names = list(host.datasets.values_list("name", flat=True))
    caps = ((host.facts or {}).get("zfs") or {}).get("capabilities") or {}
    wal = cluster.wal_dataset.name if cluster.wal_dataset else None
    chosen = plan.for_cluster(cluster.data_dataset.name, wal, names,
                              multi_snapshot=bool(caps.get("multi_snapshot")))
    state: dict = {"cluster": cluster.pk, "server_version_num": cluster.server_version_num}
    if chosen.method == plan.BACKUP or checkpoint:
        # A stopped cluster's datasets snapshot as they are; psql needs it running.
        if cluster.down_reason:
            raise _refuse("cluster", f"{cluster.down_reason}: this snapshot needs psql "
                                     "(a CHECKPOINT or backup mode)")
        try:  # psql runs: checked now, not on the host
            cluster.target()
        except InvalidValue as exc:
            raise _refuse("cluster", f"cannot reach it with psql: {exc}") from None
        state["target"] = {"owner": cluster.owner, "bin_dir": cluster.bin_dir,
                           "socket_dir": cluster.socket_dir, "port": cluster.port}
    return chosen, state


def _dataset_plan(host: Host, name: object) -> tuple[plan.SnapshotPlan, dict]:
    try:
        name = dataset_name(name)
    except InvalidValue as exc:
        raise _refuse("dataset", exc.reason) from None
    if not host.datasets.filter(name=name).exists():
        raise _refuse("dataset", f"{name} is not a dataset of {host.name} (run discovery)")
    return plan.for_dataset(name), {}


def destroy(snapshot: Snapshot, *, force: bool = False, by=None,
            trigger: str = Operation.Trigger.API) -> Operation:
    """Start destroying one snapshot, unless a guard refuses it (409 with the reason)."""
    refusal = guards.destroy_refusal(full_name=snapshot.full_name, userrefs=snapshot.userrefs,
                                     clones=snapshot.clones, origin=snapshot.origin, force=force,
                                     protected=protection.protected(snapshot.host,
                                                                    [snapshot.dataset]))
    if refusal:
        raise Conflict(refusal.message, code=refusal.code)
    return engine.start(steps.DESTROY.name, host=snapshot.host, trigger=trigger, user=by,
                        subject=f"{snapshot.host.name}: destroy {snapshot.full_name}"[:200],
                        state={"snapshot": snapshot.full_name, "force": bool(force)})


def hold(snapshot: Snapshot, *, by=None, trigger: str = Operation.Trigger.API) -> Operation:
    return _hold_or_release(snapshot, "hold", by, trigger)


def release(snapshot: Snapshot, *, by=None, trigger: str = Operation.Trigger.API) -> Operation:
    if not snapshot.held:
        raise Conflict(f"{snapshot.full_name} is not held", code="not_held")
    if snapshot.held_by_others_only:
        raise Conflict(f"{snapshot.full_name} is held by {', '.join(snapshot.holds)}, not by "
                       "PoZoL: release it on the host if it is yours to release",
                       code="not_ours")
    return _hold_or_release(snapshot, "release", by, trigger)


def _hold_or_release(snapshot: Snapshot, action: str, by, trigger: str) -> Operation:
    return engine.start(steps.HOLD.name, host=snapshot.host, trigger=trigger, user=by,
                        subject=f"{snapshot.host.name}: {action} {snapshot.full_name}"[:200],
                        state={"snapshot": snapshot.full_name, "action": action})


def start_refresh(host: Host, *, by=None, trigger: str = Operation.Trigger.SYSTEM) -> Operation:
    return engine.start(steps.REFRESH.name, host=host, trigger=trigger, user=by,
                        subject=f"{host.name}: list snapshots")


def rollback(snapshot: Snapshot, *, destroy_newer: bool = False, by=None,
             trigger: str = Operation.Trigger.API) -> Operation:
    """Start returning a cluster to one of its snapshots: PostgreSQL stopped, data and WAL
    rolled back to the snapshots of that name, PostgreSQL started (it recovers as after a
    crash). The rollback point taken before `pg_upgrade --link`, for one.

    Refused (409) when the snapshot is not of a cluster's pair, or newer snapshots are in
    the way and destroy_newer is not said, or one of those may not be destroyed.
    """
    host = snapshot.host
    cluster = cluster_of(snapshot)
    datasets = cluster_datasets(cluster)
    rows = {row.full_name: row for row in
            Snapshot.objects.filter(host=host, dataset__in=datasets)}
    chosen = plan_rollback(datasets, snapshot.name, [
        Listed(row.dataset, row.name, int(row.created_at.timestamp()) if row.created_at else None)
        for row in rows.values()])
    refusal = guards.rollback_refusal(chosen, rows, destroy_newer=destroy_newer,
                                      protected=protection.protected(host, datasets))
    if refusal:
        raise Conflict(refusal.message, code=refusal.code)
    try:
        target = cluster.target()
    except InvalidValue as exc:
        raise _refuse("snapshot", f"its cluster cannot be reached with pg_ctl: {exc}") from None
    return engine.start(
        steps.ROLLBACK.name, host=host, trigger=trigger, user=by,
        subject=f"{host.name}: roll {cluster.data_dir} back to @{snapshot.name}"[:200],
        state={"cluster": cluster.pk, "datasets": datasets, "snapshot": snapshot.name,
               "destroy_newer": bool(destroy_newer),
               "target": target.as_state()})


def cluster_of(snapshot: Snapshot) -> PgCluster:
    for cluster in PgCluster.objects.filter(host=snapshot.host).select_related(
            "data_dataset", "wal_dataset"):
        if snapshot.dataset in cluster_datasets(cluster):
            return cluster
    raise _refuse("snapshot", f"{snapshot.dataset} holds no PostgreSQL cluster's data or WAL: "
                              "a rollback returns a whole cluster to one moment")


def cluster_datasets(cluster: PgCluster) -> list[str]:
    """The datasets a snapshot of `cluster` covers: its data, and its WAL when apart."""
    names = [cluster.data_dataset.name] if cluster.data_dataset else []
    if cluster.wal_dataset and cluster.wal_dataset.name not in names:
        names.append(cluster.wal_dataset.name)
    return names


def guard_of(snapshot: Snapshot, force: bool = False) -> guards.Refusal | None:
    """Why the UI should not offer to destroy it (the same guard the service applies)."""
    return guards.destroy_refusal(full_name=snapshot.full_name, userrefs=snapshot.userrefs,
                                  clones=snapshot.clones, origin=snapshot.origin, force=force)


def dataset_choices(host: Host) -> list[str]:
    return list(host.datasets.filter(type="filesystem").values_list("name", flat=True))


def has_zfs(host: Host) -> bool:
    return bool((host.facts or {}).get("zfs"))


__all__ = ["SnapshotError", "snapshot_now", "destroy", "hold", "release", "start_refresh",
           "rollback"]
