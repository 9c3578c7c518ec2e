from django.apps import AppConfig

from apps.ops.schedule import Periodic


class FleetConfig(AppConfig):
    name = "apps.fleet"
    label = "fleet"
    # Beat tasks (apps.ops.schedule): created or re-timed after every migrate.
    periodic = (
        Periodic("pozol: discover every host",
                 "fleet.discover_all", "DISCOVERY_INTERVAL"),
    )

    def ready(self) -> None:
        from apps.fleet import host_page, steps  # noqa: F401  registers the operation kinds

        host_page.register()
