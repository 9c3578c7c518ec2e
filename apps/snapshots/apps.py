from django.apps import AppConfig

from apps.ops.schedule import Periodic


class SnapshotsConfig(AppConfig):
    name = "apps.snapshots"
    label = "snapshots"
    # Beat tasks (apps.ops.schedule): created or re-timed after every migrate.
    periodic = (
        Periodic("pozol: take and prune policy snapshots",
                 "snapshots.policy_tick", "SNAPSHOT_POLICY_INTERVAL"),
    )

    def ready(self) -> None:
        from apps.snapshots import alert_kinds, host_page, inventory, steps  # noqa: F401  registers kinds

        host_page.register()
        inventory.connect()
