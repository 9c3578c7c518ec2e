"""Recover a dropped table from a snapshot (lesson 61), or as of a moment (issue 23: a
time, an LSN or a restore point, the clone then a point-in-time clone): the operator's
request checked and handed to one `drills.recover_table` operation. None opens SSH.

The clone is laid out as a drill's (apps.drills.services): PoZoL's own, named
`pozol-recover-<random>` (never a Clone row), on a port from the top of the host's
clone range, no network allowed in its pg_hba, with the host's per-clone ZFS quota and
the pool's reserve checked (here from discovery's figures, again on the host by the
step before it clones). Whether `into` exists in the origin is
asked on the host, by the operation, before anything is cloned (the web process never
opens SSH): that refusal is the operation's failure with code `exists`, and the
restore's single transaction refuses it again if the table appears meanwhile.
"""

from __future__ import annotations

import secrets
from datetime import datetime

from apps.clones import services as clone_services
from apps.common.errors import DomainError
from apps.drills import steps
from apps.drills.core import recover as core
from apps.drills.services import DrillError, _refuse, clone_room, disposable_layout
from apps.fleet.models import Host, PgCluster
from apps.ops import engine
from apps.ops.models import Operation
from apps.remote.commands import InvalidValue
from apps.snapshots.models import Snapshot
from apps.snapshots.services import cluster_datasets, cluster_of


def recover_table(snapshot: Snapshot, *, database: object, table: object,
                  into: object = None, by=None,
                  trigger: str = Operation.Trigger.API) -> Operation:
    """Start copying `table` of `database` as it was at `snapshot` back into the origin
    cluster as `into` (default `<table>_recovered`)."""
    wanted = _wanted(database, table, into)
    host = snapshot.host
    cluster = cluster_of(snapshot)
    _on_every_dataset(host, cluster, snapshot.name)
    name = f"pozol-recover-{secrets.token_hex(4)}"
    return _start(host, cluster, wanted, snapshot.name, name, None, by=by, trigger=trigger)


def recover_table_at(cluster: PgCluster, *, database: object, table: object,
                     into: object = None, at: datetime | None = None,
                     lsn: str | None = None, restore_point: str | None = None, by=None,
                     trigger: str = Operation.Trigger.API) -> Operation:
    """The same, as the table was at a moment (`at` with its time zone, an `lsn`, or a
    `restore_point` PoZoL made): the clone is a point-in-time clone's (apps.clones), the
    newest snapshot before the moment replayed forward with the archived WAL. Refused
    (400, the window in the message) when the archive does not reach the moment."""
    wanted = _wanted(database, table, into)
    if [at, lsn, restore_point].count(None) != 2:
        raise _refuse("at", "ask for one moment: at, lsn or restore_point")
    name = f"pozol-recover-{secrets.token_hex(4)}"
    try:
        moment = clone_services.moment_for(cluster, name, at=at, lsn=lsn,
                                           restore_point=restore_point)
    except DomainError as exc:
        raise DrillError(str(exc), fields=exc.fields, code=exc.code,
                         status=exc.status) from None
    _on_every_dataset(cluster.host, cluster, moment.snapshot)
    return _start(cluster.host, cluster, wanted, moment.snapshot, name, moment, by=by,
                  trigger=trigger)


def _wanted(database: object, table: object, into: object) -> core.Target:
    try:
        return core.target(database, table, into)
    except core.RecoverError as exc:
        raise _refuse(exc.field, str(exc)) from None


def _on_every_dataset(host: Host, cluster: PgCluster, snapshot: str) -> None:
    datasets = cluster_datasets(cluster)
    present = set(Snapshot.objects.filter(host=host, dataset__in=datasets, name=snapshot)
                  .values_list("dataset", flat=True))
    if present != set(datasets):
        raise _refuse("snapshot", f"@{snapshot} is not on every dataset of "
                                  f"{cluster.data_dir} ({', '.join(datasets)})")


def _start(host: Host, cluster: PgCluster, wanted: core.Target, snapshot: str, name: str,
           moment: clone_services.Moment | None, *, by, trigger: str) -> Operation:
    try:
        target = cluster.target(wanted.database)
    except InvalidValue as exc:
        raise _refuse("snapshot", f"its cluster cannot be reached with psql: {exc}") from None
    origin = clone_services.origin_of(host, cluster)
    layout = disposable_layout(host, origin, snapshot, name, no_port_status=409,
                               recovery=moment.recovery if moment else None)
    room = clone_room(host, origin, "a table recovery")
    source = (f"as of {moment.recovery.value} (from @{snapshot})" if moment
              else f"@{snapshot}")
    state = {"clone_name": layout.name, "layout": layout.stored(),
             "target": wanted.__dict__, "snapshot": snapshot,
             "origin": {"socket_dir": target.socket_dir, "port": target.port}, **room}
    if moment is not None:
        state["moment"] = {"target": moment.recovery.target, "value": moment.recovery.value,
                           "archive_timeout": moment.archive_timeout}
    return engine.start(
        steps.RECOVER.name, host=host, trigger=trigger, user=by,
        subject=f"{host.name}: recover {wanted.source} of {wanted.database} "
                f"{source} as {wanted.into}"[:200],
        state=state)
