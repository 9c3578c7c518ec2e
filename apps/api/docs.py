"""The API's Swagger UI, for signed-in users unless POZOL_PUBLIC_API_DOCS is on.

The split view serves Swagger's start-up code as its own script, so the page
needs no inline script and passes the site's Content-Security-Policy; only its
inline <style> block and the data: icons in swagger-ui.css get an exception.
"""

from __future__ import annotations

from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_update
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny, IsAuthenticated


def docs_are_public() -> bool:
    return "rest_framework.permissions.AllowAny" in \
        settings.SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"]


class ApiSchemaView(SpectacularAPIView):
    """The OpenAPI schema; a token or a session is needed unless the docs are public."""

    def get_permissions(self):
        # Decided per request, not at import like drf-spectacular's SERVE_PERMISSIONS.
        return [AllowAny() if docs_are_public() else IsAuthenticated()]


class ApiDocsView(SpectacularSwaggerSplitView):
    # Checked in get(): an anonymous browser is sent to sign in, not shown a 401.
    permission_classes = [AllowAny]
    # A page, not an API endpoint: OPTIONS would render metadata through the page's
    # HTML renderer, which has no template for it (a 500).
    http_method_names = ["get", "head"]

    @extend_schema(exclude=True)  # the page itself is no API endpoint
    def get(self, request, *args, **kwargs):
        if not docs_are_public() and not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        return super().get(request, *args, **kwargs)


api_docs = csp_update({"style-src": [SELF, UNSAFE_INLINE], "img-src": [SELF, "data:"]})(
    ApiDocsView.as_view(url_name="api-schema"))
