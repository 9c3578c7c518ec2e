"""The new-cluster page: the plan first (nothing changes), then the Operation.

Thin: the form's values go to one service; a refusal lands beside its field
(apps.ops.ui_errors.on_form). Creating redirects to the operation's page
(POST-redirect-GET: a refresh never makes a second cluster).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache

from apps.common.errors import DomainError
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.ops.ui_errors import on_form
from apps.provisioning import services
from apps.provisioning.forms import NewClusterForm


@login_required
@never_cache
def new(request, host_pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=host_pk)
    form = NewClusterForm(host, request.POST or None)
    plan = None
    if request.method == "POST" and form.is_valid():
        try:
            if request.POST.get("create"):
                _, operation = services.create_cluster(
                    host, by=request.user, trigger=Operation.Trigger.UI, **form.request())
                request.audit_operation = operation.pk
                return redirect("ops:operation", operation.pk)
            plan = services.plan_cluster(host, **form.request()).to_dict()
        except DomainError as exc:
            on_form(form, exc)
    return render(request, "provisioning/new.html", {"host": host, "form": form, "plan": plan})
