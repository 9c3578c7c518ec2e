"""The audit log page: newest first, filtered by the form above the table."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render

from apps.accounts.roles import is_operator, members_allowed
from apps.audit import services
from apps.audit.filters import AuditPageFilter
from apps.ops.paging import uncounted_page
from apps.tenants import services as services_tenants
from apps.tenants.models import Membership

PER_PAGE = 50


@members_allowed
@login_required
def audit_list(request) -> HttpResponse:
    """Operators see everything; a tenant admin its tenant's part; a bad filter is a 400."""
    if not (is_operator(request.user) or Membership.objects.filter(
            user=request.user, role=Membership.Role.TENANT_ADMIN).exists()):
        raise PermissionDenied("The audit log is for operators and tenant admins.")
    tenants = services_tenants.visible_tenants(request.user).values_list("pk", "name")
    filters = AuditPageFilter(request.GET, queryset=services.visible_to(request.user),
                              tenants=list(tenants))
    if not filters.is_valid():
        return render(request, "audit/list.html", {"filters": filters, "events": []},
                      status=400)
    page = uncounted_page(filters.qs, request.GET.get("page"), PER_PAGE)
    return render(request, "audit/list.html",
                  {"filters": filters, "events": services.with_operations(page.rows),
                   "page": page})
