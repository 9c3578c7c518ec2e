from django.apps import AppConfig

from apps.ops.schedule import Periodic


class ClonesConfig(AppConfig):
    name = "apps.clones"
    label = "clones"
    # Beat tasks (apps.ops.schedule): created or re-timed after every migrate.
    periodic = (
        Periodic("pozol: destroy clones whose time is up",
                 "clones.expire", "CLONE_EXPIRE_INTERVAL"),
    )

    def ready(self) -> None:
        from apps.clones import host_page, steps  # noqa: F401  registers kinds

        host_page.register()
