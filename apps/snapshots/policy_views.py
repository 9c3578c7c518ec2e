"""The Policies page: list, create and edit policies, assign them, preview a change.

Saving a change that would destroy existing snapshots needs its preview first: the
first Save shows what the next prune would destroy and signs the values shown; a
second Save with the same values saves. The htmx "Preview" button shows the same
list without saving.
"""

from django.contrib.auth.decorators import login_required
from django.core import signing
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from apps.common.errors import DomainError
from apps.fleet.models import Host
from apps.ops.ui_errors import cleaned, on_form
from apps.snapshots import policies
from apps.snapshots.forms import AssignForm, PolicyForm
from apps.snapshots.models import PolicyAssignment, SnapshotPolicy

SALT = "snapshots.policy-preview"


@login_required
def policy_list(request) -> HttpResponse:
    rows = SnapshotPolicy.objects.prefetch_related("assignments__host")
    return render(request, "snapshots/policies.html", {"policies": rows})


@login_required
def policy_edit(request, pk: int | None = None) -> HttpResponse:
    policy = get_object_or_404(SnapshotPolicy, pk=pk) if pk else None
    form = PolicyForm(request.POST or None, instance=policy)
    targets = None
    if request.method == "POST" and form.is_valid():
        try:
            targets = _preview(policy, form)
        except DomainError as exc:
            on_form(form, exc)
        else:
            signed = signing.dumps(form.proposed(), salt=SALT)
            if not _destroys(targets) or _confirmed(form):
                saved = form.save()
                return redirect("snapshots:policy", saved.pk)
            form = PolicyForm(request.POST.copy(), instance=policy)
            form.data["previewed"] = signed
            form.is_valid()
    return render(request, "snapshots/policy_edit.html", {
        "form": form, "policy": policy, "targets": targets,
        "hosts": Host.objects.prefetch_related("clusters", "datasets") if policy else (),
        "assignments": policy.assignments.select_related("host") if policy else ()})


def _preview(policy: SnapshotPolicy | None, form: PolicyForm) -> list[dict]:
    if policy is None:
        return []  # a new policy has no snapshots yet
    changes = {k: v for k, v in form.proposed().items() if k != "name"}
    # The form's validation wrote the posted values onto its instance: compare
    # against the policy as saved.
    return policies.preview(SnapshotPolicy.objects.get(pk=policy.pk), changes)


def _destroys(targets: list[dict]) -> bool:
    return any(t["destroy"] for t in targets)


def _confirmed(form: PolicyForm) -> bool:
    try:
        return signing.loads(form.cleaned_data.get("previewed") or "", salt=SALT) \
            == form.proposed()
    except signing.BadSignature:
        return False


@login_required
@require_POST
def policy_preview(request, pk: int) -> HttpResponse:
    """The htmx fragment: what the next prune would destroy with the posted values."""
    policy = get_object_or_404(SnapshotPolicy, pk=pk)
    form = PolicyForm(request.POST, instance=policy)
    targets, error = None, ""
    if form.is_valid():
        try:
            targets = _preview(policy, form)
        except DomainError as exc:
            error = exc.message
    else:
        error = "; ".join(m for ms in form.errors.values() for m in ms)
    return render(request, "snapshots/_policy_preview.html",
                  {"targets": targets, "error": error})


@login_required
@require_POST
def assign(request, pk: int) -> HttpResponse:
    policy = get_object_or_404(SnapshotPolicy, pk=pk)
    form = AssignForm(request.POST)
    host = get_object_or_404(Host, pk=cleaned(form, "host")["host"])
    policies.assign(policy, host, **cleaned(form)["target"])
    return redirect("snapshots:policy", policy.pk)


@login_required
@require_POST
def unassign(request, pk: int) -> HttpResponse:
    assignment = get_object_or_404(PolicyAssignment, pk=pk)
    policies.unassign(assignment)
    return redirect("snapshots:policy", assignment.policy_id)
