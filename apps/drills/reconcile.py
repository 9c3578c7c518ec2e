"""The orphan reconciler: on each host, clone datasets and postmasters the database does
not know are reported and, past a grace period and with no operation running for
them, removed (core/orphans.py decides). Beat runs it on every pinned host; an
operator runs it on one host from the API or the host page. The web process only
starts operations."""

from __future__ import annotations

from django.db import transaction

from apps.common.errors import Conflict
from apps.drills.steps import RECONCILE
from apps.fleet.models import Host
from apps.ops import engine
from apps.ops.models import Operation


def reconcile(host: Host, *, by=None, trigger: str = Operation.Trigger.API) -> Operation:
    """Start looking for (and removing) orphan clones on `host`."""
    with transaction.atomic():
        Host.objects.select_for_update().get(pk=host.pk)
        running = Operation.objects.filter(host=host, kind=RECONCILE.name,
                                           status__in=Operation.ACTIVE).first()
        if running is not None:
            raise Conflict(f"the reconciler runs on {host.name} already (operation "
                           f"#{running.pk})", code="busy")
        return engine.start(RECONCILE.name, host=host, trigger=trigger, user=by,
                            subject=f"{host.name}: find and remove orphan clones")


def reconcile_all() -> list[Operation]:
    started = []
    for host in Host.objects.filter(host_key_state=Host.KeyState.PINNED):
        try:
            started.append(reconcile(host, trigger=Operation.Trigger.SCHEDULE))
        except Conflict:
            continue
    return started
