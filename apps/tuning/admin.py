from django.contrib import admin

from apps.tuning.models import Assignment, Plan, PlanChange, Profile, ProfileVersion


class ProfileVersionInline(admin.TabularInline):
    model = ProfileVersion
    extra = 0
    readonly_fields = ("number", "settings", "citations", "note", "created_at", "created_by")
    can_delete = False


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "builtin", "created_at")
    inlines = [ProfileVersionInline]


@admin.register(ProfileVersion)
class ProfileVersionAdmin(admin.ModelAdmin):
    list_display = ("profile", "number", "note", "created_at", "created_by")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("host", "profile", "applied_version", "drift_checked_at")


class PlanChangeInline(admin.TabularInline):
    model = PlanChange
    extra = 0
    can_delete = False
    fields = ("position", "layer", "target", "key", "current", "desired", "method", "supported",
              "status", "before", "after", "error")
    readonly_fields = fields


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = ("id", "host", "kind", "status", "profile_version", "created_at")
    list_filter = ("kind", "status")
    inlines = [PlanChangeInline]
