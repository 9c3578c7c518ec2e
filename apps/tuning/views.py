import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from apps.common.errors import DomainError
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.ops.ui_errors import back_on_refusal, cleaned, on_form
from apps.tuning import services
from apps.tuning.forms import ApplyForm, AssignForm, ProfileForm, RollbackForm
from apps.tuning.models import Plan, Profile


@login_required
def profiles(request) -> HttpResponse:
    archived = request.GET.get("archived") in ("1", "true")
    rows = Profile.objects.filter(archived_at__isnull=not archived) \
        .prefetch_related("versions", "assignments__host")
    return render(request, "tuning/profiles.html", {"profiles": rows, "archived": archived})


@login_required
def profile_detail(request, pk: int) -> HttpResponse:
    profile = get_object_or_404(Profile, pk=pk)
    return render(request, "tuning/profile.html", {
        "profile": profile, "current": profile.current, "versions": profile.versions.all(),
        "settings_json": json.dumps(profile.current.settings, indent=2)})


@login_required
def profile_edit(request, pk: int | None = None) -> HttpResponse:
    profile = get_object_or_404(Profile, pk=pk) if pk else None
    initial = {"settings": json.dumps(profile.current.settings if profile else
                                      {"zfs": {"data": {}, "wal": {}}, "module": {},
                                       "sysctl": {}, "postgres": {}}, indent=2)}
    if profile:
        initial.update(name=profile.name, description=profile.description)
    form = ProfileForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            if profile:
                services.edit_profile(profile, settings=data["settings"], note=data["note"],
                                      name=data["name"], description=data["description"],
                                      by=request.user)
            else:
                profile = services.create_profile(name=data["name"], settings=data["settings"],
                                                  description=data["description"],
                                                  by=request.user)
        except DomainError as exc:
            on_form(form, exc)
        else:
            return redirect("tuning:profile", profile.pk)
    return render(request, "tuning/profile_edit.html", {"form": form, "profile": profile})


@login_required
@require_POST
def profile_copy(request, pk: int) -> HttpResponse:
    profile = get_object_or_404(Profile, pk=pk)
    copy = services.copy_profile(profile, name=services.copy_name(profile), by=request.user)
    return redirect("tuning:profile_edit", copy.pk)


@login_required
@require_POST
def profile_delete(request, pk: int) -> HttpResponse:
    profile = get_object_or_404(Profile, pk=pk)
    back_on_refusal(request, "tuning:profile", pk)
    outcome = services.delete_profile(profile)
    messages.info(request, f"{profile.name} {outcome}" + (
        ": plans made from it keep its versions" if outcome == "archived" else "."))
    return redirect("tuning:profiles")


@login_required
@require_POST
def assign(request, host_pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=host_pk)
    form = AssignForm(request.POST)
    if not form.is_valid():
        raise services.TuningError("choose an active profile to assign",
                                   fields={"profile": form.errors.get("profile", [])})
    profile = form.cleaned_data["profile"]
    services.assign(host, profile, by=request.user)
    messages.info(request, f"{host.name} now follows {profile.name}.")
    return redirect("fleet:host_section", host.pk, "tuning")


@login_required
@require_POST
def unassign(request, host_pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=host_pk)
    if services.unassign(host):
        messages.info(request, f"{host.name} follows no profile now. Nothing on the host was "
                               "changed: roll a plan back to restore what it wrote.")
    return redirect("fleet:host_section", host.pk, "tuning")


@login_required
@require_POST
def make_plan(request, host_pk: int) -> HttpResponse:
    back_on_refusal(request, "fleet:host_section", host_pk, "tuning")
    plan = services.make_plan(get_object_or_404(Host, pk=host_pk), by=request.user)
    return redirect("tuning:plan", plan.pk)


@login_required
def plan_detail(request, pk: int) -> HttpResponse:
    plan = get_object_or_404(Plan.objects.select_related("host", "operation"), pk=pk)
    by_stage = {stage: [f for f in plan.findings if f.get("stage", "current") == stage]
                for stage in ("introduced", "resolved", "current")}
    return render(request, "tuning/plan.html", {
        "plan": plan, "changes": plan.changes.all(), "findings": by_stage,
        "form": ApplyForm(required=plan.requires_acknowledgement)})


@login_required
@require_POST
def plan_apply(request, pk: int) -> HttpResponse:
    plan = get_object_or_404(Plan, pk=pk)
    back_on_refusal(request, "tuning:plan", pk)
    data = cleaned(ApplyForm(request.POST, required=plan.requires_acknowledgement))
    operation = services.apply_plan(plan, allow_restart=data["allow_restart"],
                                    acknowledge=data["acknowledge"],
                                    trigger=Operation.Trigger.UI, by=request.user)
    return redirect("ops:operation", operation.pk)


@login_required
@require_POST
def plan_rollback(request, pk: int) -> HttpResponse:
    plan = get_object_or_404(Plan, pk=pk)
    back_on_refusal(request, "tuning:plan", pk)
    allow_restart = cleaned(RollbackForm(request.POST))["allow_restart"]
    _, operation = services.rollback(plan, allow_restart=allow_restart,
                                     trigger=Operation.Trigger.UI, by=request.user)
    return redirect("ops:operation", operation.pk)
