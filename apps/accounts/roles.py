"""Who may reach what: operators run the fleet; everyone else is a tenant's member.

Operator-only is the default everywhere, so a new endpoint is safe before anyone
thinks about it: the API's DEFAULT_PERMISSION_CLASSES is `IsOperator`, and
`OperatorOnlyMiddleware` refuses every page to a signed-in non-operator unless
its view is marked `members_allowed` (and then the view scopes what it shows).
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from rest_framework.permissions import BasePermission

# Pages anyone signed in reaches: signing in and out, the admin (which checks
# is_staff itself) and the API's documentation (no data in it).
OPEN_NAMESPACES = {"admin"}
OPEN_NAMES = {"login", "logout", "api-docs", "api-schema"}
# Where a member goes instead of an operator's front page.
MEMBER_LANDING = {"fleet:overview": "tenants:mine"}


def is_operator(user) -> bool:
    """An operator is a staff account: what `create_api_token --create` and
    `ensure_operator` make, and what PoZoL's users were before tenants existed."""
    return bool(user is not None and user.is_authenticated and user.is_active
                and (user.is_staff or user.is_superuser))


class IsOperator(BasePermission):
    """The API's default: an operator's token or session."""

    message = "This part of PoZoL is for operators."

    def has_permission(self, request, view) -> bool:
        return is_operator(request.user)


def members_allowed(view: Callable) -> Callable:
    """Mark a page that tenant members may open; it must scope what it shows itself."""
    view.members_allowed = True
    return view


class OperatorOnlyMiddleware:
    """Pages are for operators unless marked `members_allowed`.

    API views are left to DRF (their permission classes, operator-only by
    default): a refusal there must keep the API's error shape. Anonymous
    visitors are left to each view's login_required.
    """

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, args, kwargs):
        user = getattr(request, "user", None)
        if (user is None or not user.is_authenticated or is_operator(user)
                or getattr(view_func, "cls", None) is not None
                or getattr(view_func, "members_allowed", False)):
            return None
        match = request.resolver_match
        if match.namespace in OPEN_NAMESPACES or match.url_name in OPEN_NAMES:
            return None
        if match.view_name in MEMBER_LANDING:
            return redirect(MEMBER_LANDING[match.view_name])
        raise PermissionDenied("This page is for operators.")
