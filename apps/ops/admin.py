from django.contrib import admin

from apps.ops.models import LogLine, Operation


class LogLineInline(admin.TabularInline):
    model = LogLine
    extra = 0
    readonly_fields = ("at", "level", "text")
    can_delete = False


@admin.register(Operation)
class OperationAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "subject", "step", "status", "progress", "trigger",
                    "created_at")
    list_filter = ("status", "kind", "trigger")
    search_fields = ("subject", "kind")
    readonly_fields = ("created_at", "started_at", "finished_at", "updated_at")
    inlines = [LogLineInline]


@admin.register(LogLine)
class LogLineAdmin(admin.ModelAdmin):
    list_display = ("operation", "at", "level", "text")
    list_filter = ("level",)
