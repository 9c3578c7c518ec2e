"""API tokens in the admin.

Adding a token here issues a real one: the secret is made on save and its
plaintext is shown once, on the page that answers the save (not stored in a
message or session), exactly like `manage.py create_api_token`.
"""

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.cache import add_never_cache_headers

from apps.accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("hint", "user", "name", "created_at", "last_used_at", "expires_at",
                    "revoked_at")
    list_filter = ("expires_at", "revoked_at")
    search_fields = ("hint", "name", "user__username")

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        if obj is None:
            return ["user", "name", "expires_at"]
        return ["user", "name", "expires_at", "hint", "created_at", "last_used_at",
                "revoked_at", "revoked_by"]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None):
        if obj is None:
            return ()
        # A token's owner never changes: revoke it and issue another instead.
        return ("user", "hint", "created_at", "last_used_at", "revoked_at", "revoked_by")

    def save_model(self, request: HttpRequest, obj: ApiToken, form, change: bool) -> None:
        if not change:
            # Kept on the request only for response_add, which shows it once.
            request._issued_token = obj.set_new_secret()
        super().save_model(request, obj, form, change)

    def response_add(self, request: HttpRequest, obj: ApiToken,
                     post_url_continue: str | None = None) -> HttpResponse:
        response = TemplateResponse(request, "admin/accounts/apitoken/issued.html", {
            **self.admin_site.each_context(request),
            "opts": self.opts, "token": obj, "raw": request._issued_token,
            "title": "API token issued",
        })
        add_never_cache_headers(response)
        return response
