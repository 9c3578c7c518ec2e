"""Tenants (operators), and a tenant's page (its members too)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from apps.accounts.roles import is_operator, members_allowed
from apps.common.errors import DomainError
from apps.fleet.models import Host, PgCluster
from apps.ops.ui_errors import on_form
from apps.tenants import services
from apps.tenants.forms import (
    ClusterForm,
    MemberForm,
    QuotaForm,
    RoleForm,
    TenantForm,
)
from apps.tenants.models import ClusterAssignment, Membership, Tenant


@members_allowed
@login_required
def mine(request) -> HttpResponse:
    """A member's front page: its tenant's page, or its tokens without a tenant."""
    membership = services.membership_of(request.user)
    if membership is None:
        return redirect("accounts:tokens")
    return redirect("tenants:detail", membership.tenant_id)


@login_required
def tenant_list(request) -> HttpResponse:
    form = TenantForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            tenant = services.create_tenant(form.cleaned_data["name"])
        except DomainError as exc:
            on_form(form, exc)
        else:
            messages.success(request, f"Tenant {tenant.name} created.")
            return redirect("tenants:detail", tenant.pk)
    rows = Tenant.objects.prefetch_related("memberships__user", "clusters__host")
    return render(request, "tenants/list.html", {"tenants": rows, "form": form})


@members_allowed
@login_required
def tenant_detail(request, pk: int) -> HttpResponse:
    """Operators manage the tenant here; its members see who and what belongs to it."""
    tenant = get_object_or_404(services.visible_tenants(request.user), pk=pk)
    operator = is_operator(request.user)
    manages = services.managed_tenants(request.user).filter(pk=tenant.pk).exists()
    member_form = MemberForm(request.POST or None)
    if request.method == "POST":
        if not manages:
            raise PermissionDenied("Only operators and the tenant's admins add members.")
        if member_form.is_valid():
            try:
                data = member_form.cleaned_data
                services.add_member(tenant, data["username"], data["role"], data["password"],
                                    by=request.user)
            except DomainError as exc:
                on_form(member_form, exc)
            else:
                messages.success(request, f"{data['username']} added to {tenant.name} as "
                                          f"{Membership.Role(data['role']).label}.")
                return redirect("tenants:detail", tenant.pk)
    return render(request, "tenants/detail.html",
                  _detail_context(tenant, operator, manages, member_form))


def _detail_context(tenant: Tenant, operator: bool, manages: bool,
                    member_form: MemberForm) -> dict:
    context = {"tenant": tenant, "operator": operator, "manages": manages,
               "member_form": member_form,
               "members": tenant.memberships.select_related("user"),
               "clusters": tenant.clusters.select_related("host"),
               "roles": Membership.Role.choices}
    if operator:
        context["quota_form"] = QuotaForm.of(tenant)
        taken = set(ClusterAssignment.objects.values_list("host_id", "cluster_data_dir"))
        free = [c for c in PgCluster.objects.select_related("host").order_by("host__name", "port")
                if (c.host_id, c.data_dir) not in taken]
        context["cluster_form"] = ClusterForm(clusters=free)
    return context


@login_required
def tenant_quotas(request, pk: int) -> HttpResponse:
    """An operator sets the tenant's clone quotas (the form is on the tenant's page)."""
    tenant = get_object_or_404(Tenant, pk=pk)
    form = QuotaForm.of(tenant, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.set_quotas(tenant, **form.values())
        except DomainError as exc:
            on_form(form, exc)
        else:
            messages.success(request, f"{tenant.name}'s quotas are set.")
            return redirect("tenants:detail", tenant.pk)
    return render(request, "tenants/quotas.html", {"tenant": tenant, "form": form})


@login_required
@require_POST
def tenant_delete(request, pk: int) -> HttpResponse:
    tenant = get_object_or_404(Tenant, pk=pk)
    services.delete_tenant(tenant)
    messages.success(request, f"Tenant {tenant.name} deleted.")
    return redirect("tenants:list")


def _managed_membership(request, pk: int) -> Membership:
    """A membership the user manages; another tenant's is not found."""
    return get_object_or_404(
        Membership.objects.filter(tenant__in=services.managed_tenants(request.user)), pk=pk)


@members_allowed
@login_required
@require_POST
def member_role(request, pk: int) -> HttpResponse:
    membership = _managed_membership(request, pk)
    form = RoleForm(request.POST)
    if not form.is_valid():
        raise DomainError("role: choose one from the list.", fields={"role": ["invalid"]})
    services.set_role(membership, form.cleaned_data["role"])
    messages.success(request, f"{membership.user.username} is now "
                              f"{Membership.Role(form.cleaned_data['role']).label}.")
    return redirect("tenants:detail", membership.tenant_id)


@members_allowed
@login_required
@require_POST
def member_remove(request, pk: int) -> HttpResponse:
    membership = _managed_membership(request, pk)
    services.remove_member(membership)
    messages.success(request, f"{membership.user.username} removed from "
                              f"{membership.tenant.name}.")
    return redirect("tenants:detail", membership.tenant_id)


@login_required
@require_POST
def cluster_assign(request, pk: int) -> HttpResponse:
    tenant = get_object_or_404(Tenant, pk=pk)
    form = ClusterForm(request.POST, clusters=PgCluster.objects.select_related("host"))
    if not form.is_valid():
        raise DomainError("cluster: choose one from the list.",
                          fields={"cluster": ["not a valid choice"]})
    host_pk, data_dir = form.host_and_dir()
    host = get_object_or_404(Host, pk=host_pk)
    services.assign_cluster(tenant, host, data_dir)
    messages.success(request, f"{data_dir} on {host.name} assigned to {tenant.name}.")
    return redirect("tenants:detail", tenant.pk)


@login_required
@require_POST
def cluster_unassign(request, pk: int) -> HttpResponse:
    assignment = get_object_or_404(ClusterAssignment, pk=pk)
    services.unassign_cluster(assignment)
    messages.success(request, f"{assignment.cluster_data_dir} on {assignment.host.name} "
                              f"unassigned from {assignment.tenant.name}.")
    return redirect("tenants:detail", assignment.tenant_id)

