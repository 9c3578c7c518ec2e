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
        from apps.clones import host_page, services, steps  # noqa: F401  registers kinds
        from apps.replication import readers

        host_page.register()
        readers.READERS.append(services.replaying)
