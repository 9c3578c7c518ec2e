"""Recover a dropped table from a snapshot (lesson 61): the operator's request checked
and handed to one `drills.recover_table` operation. None opens SSH.

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

from apps.clones import services as clone_services
from apps.clones.core.layout import Layout
from apps.drills import steps
from apps.drills.core import recover as core
from apps.drills.services import _refuse, clone_room, disposable_layout
from apps.fleet.models import Host
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
    try:
        wanted = core.target(database, table, into)
    except core.RecoverError as exc:
        raise _refuse(exc.field, str(exc)) from None
    host = snapshot.host
    cluster = cluster_of(snapshot)
    datasets = cluster_datasets(cluster)
    present = set(Snapshot.objects.filter(host=host, dataset__in=datasets, name=snapshot.name)
                  .values_list("dataset", flat=True))
    if present != set(datasets):
        raise _refuse("snapshot", f"@{snapshot.name} is not on every dataset of "
                                  f"{cluster.data_dir} ({', '.join(datasets)})")
    try:
        target = cluster.target(wanted.database)
    except InvalidValue as exc:
        raise _refuse("snapshot", f"its cluster cannot be reached with psql: {exc}") from None
    origin = clone_services.origin_of(host, cluster)
    layout = _layout(host, origin, snapshot.name)
    room = clone_room(host, origin, "a table recovery")
    return engine.start(
        steps.RECOVER.name, host=host, trigger=trigger, user=by,
        subject=f"{host.name}: recover {wanted.source} of {wanted.database} "
                f"@{snapshot.name} as {wanted.into}"[:200],
        state={"clone_name": layout.name, "layout": layout.stored(),
               "target": wanted.__dict__, "snapshot": snapshot.name,
               "origin": {"socket_dir": target.socket_dir, "port": target.port}, **room})


def _layout(host: Host, origin, snapshot: str) -> Layout:
    return disposable_layout(host, origin, snapshot, f"pozol-recover-{secrets.token_hex(4)}",
                             no_port_status=409)
