from django.contrib import admin

from apps.alerts.models import Alert


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = ("host", "kind", "created_at", "resolved_at")
    list_filter = ("kind",)
