from django.contrib import admin

from apps.accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("hint", "user", "name", "created_at", "last_used_at")
    readonly_fields = ("digest", "hint", "created_at", "last_used_at")
