"""OPTIONS answers as GET does for an object the caller cannot see.

DRF's SimpleMetadata describes a detail route's fields without looking the
object up (and swallows the 404 where it does), so OPTIONS on another tenant's
clone answered 200 where GET answers 404. Every API view gets this class
(settings.REST_FRAMEWORK), so the lookup, with the view's own scoped queryset
and object permissions, runs first and its 404 or 403 is the answer.
"""

from __future__ import annotations

from typing import Any

from rest_framework.metadata import SimpleMetadata
from rest_framework.request import Request

# rest_framework.generics is imported when first needed: DRF's views module imports
# this class while APIView is being defined, so a module-level import is circular.


def names_an_object(view: Any) -> bool:
    """Whether the route's URL names one object of a generic view's queryset."""
    from rest_framework.generics import GenericAPIView

    if not isinstance(view, GenericAPIView):
        return False
    # A generic view without a queryset (one that reads through a service) has no
    # lookup to run; such views are operator-only or answer through their own GET.
    has_queryset = view.queryset is not None or \
        type(view).get_queryset is not GenericAPIView.get_queryset
    lookup = view.lookup_url_kwarg or view.lookup_field
    return has_queryset and lookup in (view.kwargs or {})


class ScopedMetadata(SimpleMetadata):
    def determine_metadata(self, request: Request, view: Any) -> dict[str, Any]:
        if names_an_object(view):
            view.get_object()  # raises Http404 / PermissionDenied exactly as GET would
        return super().determine_metadata(request, view)
