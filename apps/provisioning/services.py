"""Creating and retiring clusters: what the API asks, one function each.

None of these open SSH: they check the request against the host's facts and
start an Operation (apps/provisioning/steps.py).
"""

from __future__ import annotations

from django.db import transaction

from apps.clones.models import Clone
from apps.common.errors import Conflict, DomainError
from apps.fleet import reserves
from apps.fleet import services as fleet_services
from apps.fleet.models import Host, PgCluster
from apps.ops import engine
from apps.ops.models import Operation
from apps.provisioning import steps
from apps.provisioning.core import layout
from apps.provisioning.core.settings import resolved
from apps.remote import snapshot_plan
from apps.replication.models import ReplicationLink
from apps.tenants.models import ClusterAssignment
from apps.tuning.models import Profile
from apps.wal.models import WalArchive


class ProvisioningError(DomainError):
    """A cluster that cannot be made or retired as asked."""


def offered_majors(host: Host) -> list[int]:
    """The PostgreSQL majors a new cluster of the host can be: those its clusters run
    and those installed from packages, as its last discovery found them."""
    facts = host.typed_facts()
    return sorted(facts.majors()) if facts else []


def plan_cluster(host: Host, *, major: int, name: str, port: int | None = None,
                 pool: str | None = None, profile: Profile | None = None) -> layout.Plan:
    """The plan for a new cluster (nothing changes): datasets, properties, initdb,
    settings, how it starts. Refused with the reason when the host cannot take it."""
    facts = host.typed_facts()
    if facts is None:
        raise ProvisioningError(f"{host.name} has not been discovered yet: discover it first",
                                code="not_discovered", status=409)
    zfs = settings = None
    notes: list[str] = []
    if profile is not None:
        try:
            zfs, settings, notes = resolved(facts, profile.current.profile_settings, major)
        except ValueError as exc:
            raise ProvisioningError(f"profile {profile.name}: {exc}",
                                    fields={"profile": [str(exc)]}) from None
    taken = set(host.clusters.exclude(port=None).values_list("port", flat=True))
    taken |= set(Clone.objects.filter(host=host, state__in=Clone.LIVE)
                 .values_list("port", flat=True))
    try:
        plan = layout.plan(facts, layout.Request(major, name, port, pool), taken_ports=taken,
                           zfs=zfs, settings=settings, profile=profile.name if profile else None)
    except layout.Refused as exc:
        status = 409 if exc.code in ("cluster_exists", "port_taken") else 400
        raise ProvisioningError(f"{exc.field}: {exc}", code=exc.code, status=status,
                                fields={exc.field: [str(exc)]}) from None
    shortage = reserves.refusal(host, plan.pool, layout.ROOM_NEEDED, f"cluster {name}")
    if shortage:
        raise Conflict(shortage.message, code="no_room", fields={"pool": [shortage.message]})
    if notes:
        plan = layout.Plan(**{**plan.__dict__, "notes": (*notes, *plan.notes)})
    return plan


@transaction.atomic
def create_cluster(host: Host, *, by=None, trigger: str = Operation.Trigger.API,
                   **request) -> tuple[layout.Plan, Operation]:
    """Plan, then start the Operation that makes the cluster as planned."""
    plan = plan_cluster(host, **request)
    busy = host.operations.filter(kind=steps.CREATE.name, status__in=Operation.ACTIVE,
                                  subject=f"{host.name}: {plan.parent}")
    if busy.exists():
        raise Conflict(f"{plan.parent} is being created already", code="cluster_exists")
    operation = engine.start(steps.CREATE.name, host=host, subject=f"{host.name}: {plan.parent}",
                             state={"plan": plan.to_dict(),
                                    "room": reserves.room_state([plan.pool],
                                                                layout.ROOM_NEEDED,
                                                                f"cluster {plan.name}")},
                             trigger=trigger, user=by)
    return plan, operation


def dependents(host: Host, cluster: PgCluster, *, archive: bool = True) -> list[str]:
    """What would break if the cluster went: live clones, replication links, tenants, and
    (with `archive`) its WAL archive (outside its parent: it would outlive it, and no row
    would name it)."""
    found = []
    clones = Clone.objects.filter(host=host, cluster_data_dir=cluster.data_dir,
                                  state__in=Clone.LIVE).values_list("name", flat=True)
    found += [f"clone {name}" for name in clones]
    datasets = {d.name for d in (cluster.data_dataset, cluster.wal_dataset) if d}
    for link in ReplicationLink.objects.filter(source_host=host):
        if link.cluster_data_dir == cluster.data_dir or set(link.sources or ()) & datasets:
            found.append(f"replication link {link.name}")
    if ClusterAssignment.objects.filter(host=host, cluster_data_dir=cluster.data_dir).exists():
        found.append("a tenant")
    if archive:
        archives = WalArchive.objects.filter(cluster=cluster).exclude(
            state=WalArchive.State.OFF)
        found += [f"its WAL archive on {a.dataset} (disable archiving first)"
                  for a in archives]
    return found


def retire_cluster(host: Host, cluster_id: int, *, stop: bool = False,
                   datasets: str = "keep", final_snapshot: bool = False, by=None,
                   trigger: str = Operation.Trigger.API) -> Operation | None:
    """Forget a cluster (the default, as before: refused while it runs), or stop it, take
    a final snapshot and/or destroy its datasets as an Operation that then forgets it."""
    if not stop and datasets == "keep" and not final_snapshot:
        _forget(host, cluster_id)
        return None
    if datasets == "destroy" and final_snapshot:
        raise ProvisioningError(
            "a final snapshot would be destroyed with the datasets: keep the datasets to "
            "keep one (or replicate it first)", fields={"final_snapshot": ["not with destroy"]})
    with transaction.atomic():
        host.hold_discovered_rows()
        cluster = host.clusters.select_related("data_dataset", "wal_dataset") \
            .filter(pk=cluster_id).first()
        if cluster is None:
            raise ProvisioningError(f"{host.name} has no cluster {cluster_id}",
                                    code="not_found", status=404)
        if cluster.running and not stop:
            raise Conflict(f"the cluster at {cluster.data_dir} is running: ask stop=true to "
                           "stop it first", code="running")
        _refuse_if_used(host, cluster)
        targets = _destroyed(host, cluster) if datasets == "destroy" else []
        snapshot = _final_snapshot(host, cluster) if final_snapshot else None
        try:
            target = cluster.target().as_state()
        except Exception as exc:  # InvalidValue: discovery could not fill the row
            raise Conflict(f"the cluster cannot be reached as recorded: {exc}",
                           code="unnamable") from None
        return engine.start(steps.RETIRE.name, host=host,
                            subject=f"{host.name}: {cluster.data_dir}", trigger=trigger, user=by,
                            state={"cluster": cluster.pk, "data_dir": cluster.data_dir,
                                   "target": target, "stop": stop, "destroy": targets,
                                   "snapshot": snapshot})


def _forget(host: Host, cluster_id: int) -> None:
    """Forget a cluster that is down for good, nothing on the host touched: refused while
    clones, links or tenants use it (a link's target clones need its row). Not for its
    WAL archive: a cluster gone for good may no longer be able to turn archiving off,
    and its archive stays on the host as its datasets do."""
    with transaction.atomic():
        host.hold_discovered_rows()
        cluster = host.clusters.filter(pk=cluster_id).first()
        if cluster is not None:
            _refuse_if_used(host, cluster, archive=False)
        fleet_services.retire_cluster(host, cluster_id)


def _refuse_if_used(host: Host, cluster: PgCluster, *, archive: bool = True) -> None:
    blockers = dependents(host, cluster, archive=archive)
    if blockers:
        raise Conflict(f"the cluster at {cluster.data_dir} is used by "
                       f"{', '.join(blockers)}: remove them first", code="in_use")


def _destroyed(host: Host, cluster: PgCluster) -> list[str]:
    """The datasets that hold this cluster alone: its parent when data and WAL are its
    only children, else the data and WAL datasets; refused when another cluster, or
    anything but the cluster, lives there."""
    if cluster.data_dataset is None:
        raise Conflict(f"the cluster at {cluster.data_dir} is not on a dataset of its own",
                       code="no_dataset")
    own = [d.name for d in (cluster.data_dataset, cluster.wal_dataset) if d]
    parent = snapshot_plan.common_parent(*own) if len(set(own)) == 2 else None
    names = list(host.datasets.values_list("name", flat=True))
    if parent and "/" in parent and sorted(
            n for n in names if n.startswith(parent + "/")) == sorted(set(own)):
        targets = [parent]
    else:
        targets = list(dict.fromkeys(own))
    for name in targets:
        if "/" not in name:
            raise Conflict(f"{name} is a pool's root dataset: PoZoL does not destroy it",
                           code="pool_root")
    inside = [f"{d}/" for d in targets]
    for other in host.clusters.exclude(pk=cluster.pk).select_related("data_dataset",
                                                                      "wal_dataset"):
        for d in (other.data_dataset, other.wal_dataset):
            if d and (d.name in targets or any(d.name.startswith(p) for p in inside)):
                raise Conflict(f"the cluster at {other.data_dir} also lives on {d.name}",
                               code="shared_dataset")
    return targets


def _final_snapshot(host: Host, cluster: PgCluster) -> dict:
    from django.utils import timezone

    if cluster.data_dataset is None:
        raise Conflict("the cluster is not on ZFS: no snapshot can be taken",
                       code="no_dataset")
    caps = ((host.facts or {}).get("zfs") or {}).get("capabilities") or {}
    plan = snapshot_plan.for_cluster(
        cluster.data_dataset.name, cluster.wal_dataset.name if cluster.wal_dataset else None,
        list(host.datasets.values_list("name", flat=True)),
        multi_snapshot=bool(caps.get("multi_snapshot")))
    name = f"pozol_final_{timezone.now():%Y%m%d_%H%M%S}"
    # Taken once the cluster is stopped: one snapshot per dataset is consistent then.
    recursive = plan.method == snapshot_plan.RECURSIVE
    return {"names": plan.names(name) if recursive else [f"{d}@{name}" for d in plan.datasets],
            "recursive": recursive}
