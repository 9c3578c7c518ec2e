from django.contrib import admin

from apps.benchmarks.models import Benchmark, Validation


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ("id", "host", "port", "database", "profile_version_label", "created_at")
    list_filter = ("host",)
    readonly_fields = ("operation", "summary", "series", "wal_bytes_before", "wal_bytes_after",
                       "wal_bytes_per_transaction", "created_at")


@admin.register(Validation)
class ValidationAdmin(admin.ModelAdmin):
    list_display = ("id", "host", "label", "before", "after", "created_at")

