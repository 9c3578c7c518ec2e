from django.contrib import admin

from apps.fleet.models import Dataset, Disk, Host, PgCluster, Pool


@admin.register(Host)
class HostAdmin(admin.ModelAdmin):
    list_display = ("name", "address", "port", "host_key_state", "reachable", "last_seen_at")
    list_filter = ("host_key_state", "reachable")
    search_fields = ("name", "address")
    exclude = ("private_key_encrypted",)
    readonly_fields = ("host_key", "host_key_fingerprint", "presented_host_key",
                       "presented_fingerprint", "last_seen_at", "last_discovery_at",
                       "last_error", "last_error_code", "facts", "created_at")


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ("host", "name", "health", "size", "capacity", "fragmentation")


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("host", "name", "recordsize", "compression", "compressratio", "atime")
    list_filter = ("host",)
    search_fields = ("name",)


@admin.register(PgCluster)
class PgClusterAdmin(admin.ModelAdmin):
    list_display = ("host", "port", "version", "data_dir", "data_checksums")


@admin.register(Disk)
class DiskAdmin(admin.ModelAdmin):
    list_display = ("host", "name", "type", "size", "volatile_write_cache", "write_cache")
