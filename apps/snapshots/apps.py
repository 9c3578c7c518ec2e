from django.apps import AppConfig


class SnapshotsConfig(AppConfig):
    name = "apps.snapshots"
    label = "snapshots"

    def ready(self) -> None:
        from apps.snapshots import host_page, inventory, steps  # noqa: F401  registers kinds

        host_page.register()
        inventory.connect()
