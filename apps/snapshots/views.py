"""Snapshot now, hold, release and destroy from the host page's Snapshots tab.

Thin: each view reads the form and calls one service; a refusal (DomainError)
goes back to the tab as a message (apps.ops.ui_errors' middleware).
"""

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from apps.common.errors import DomainError
from apps.fleet.models import Host, PgCluster
from apps.ops.models import Operation
from apps.ops.ui_input import posted_id
from apps.snapshots import services
from apps.snapshots.models import Snapshot


@login_required
@require_POST
def take(request, host_pk: int):
    host = get_object_or_404(Host, pk=host_pk)
    kind, _, value = request.POST.get("target", "").partition(":")
    cluster, dataset = None, None
    if kind == "cluster":
        cluster = get_object_or_404(PgCluster, pk=posted_id({"target": value}, "target"),
                                    host=host)
    elif kind == "dataset":
        dataset = value
    else:
        raise DomainError("target: choose a cluster or a dataset from the list",
                          fields={"target": ["not a valid choice"]})
    operation = services.snapshot_now(
        host, cluster=cluster, dataset=dataset, label=request.POST.get("label", ""),
        hold=request.POST.get("hold") == "on", checkpoint=request.POST.get("checkpoint") == "on",
        by=request.user, trigger=Operation.Trigger.UI)
    return redirect("ops:operation", operation.pk)


ACTIONS = {"hold": services.hold, "release": services.release, "destroy": services.destroy}


@login_required
@require_POST
def act(request, pk: int, action: str):
    snapshot = get_object_or_404(Snapshot.objects.select_related("host"), pk=pk)
    operation = ACTIONS[action](snapshot, by=request.user, trigger=Operation.Trigger.UI)
    return redirect("ops:operation", operation.pk)
