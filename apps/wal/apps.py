from django.apps import AppConfig

from apps.ops.schedule import Periodic


class WalConfig(AppConfig):
    name = "apps.wal"
    label = "wal"
    periodic = (
        Periodic("pozol: check WAL archives", "wal.tick", "WAL_CHECK_INTERVAL"),
    )

    def ready(self) -> None:
        from apps.snapshots import protection
        from apps.wal import alert_kinds, host_page, steps  # noqa: F401  registers kinds

        protection.TAKEN.append(steps.mark_snapshot)
        host_page.register()
