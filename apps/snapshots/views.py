"""Snapshot now, hold, release and destroy from the host page's Snapshots tab.

Thin: each view reads its form (apps.snapshots.forms) and calls one service; a refusal
(the form's or the service's DomainError) goes back to the tab as a message
(apps.ops.ui_errors' middleware).
"""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from apps.fleet.models import Host, PgCluster
from apps.ops.models import Operation
from apps.ops.ui_errors import cleaned
from apps.snapshots import services
from apps.snapshots.forms import SnapshotNowForm
from apps.snapshots.models import Snapshot


@login_required
@require_POST
def take(request, host_pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=host_pk)
    data = cleaned(SnapshotNowForm(request.POST))
    kind, value = data["target"]
    cluster = get_object_or_404(PgCluster, pk=value, host=host) if kind == "cluster" else None
    operation = services.snapshot_now(
        host, cluster=cluster, dataset=value if kind == "dataset" else None,
        label=data["label"], hold=data["hold"], checkpoint=data["checkpoint"],
        by=request.user, trigger=Operation.Trigger.UI)
    return redirect("ops:operation", operation.pk)


ACTIONS = {"hold": services.hold, "release": services.release, "destroy": services.destroy}


@login_required
@require_POST
def act(request, pk: int, action: str) -> HttpResponse:
    snapshot = get_object_or_404(Snapshot.objects.select_related("host"), pk=pk)
    operation = ACTIONS[action](snapshot, by=request.user, trigger=Operation.Trigger.UI)
    return redirect("ops:operation", operation.pk)
