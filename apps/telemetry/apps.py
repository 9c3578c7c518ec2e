from django.apps import AppConfig

from apps.ops.schedule import Periodic


class TelemetryConfig(AppConfig):
    name = "apps.telemetry"
    label = "telemetry"
    # Beat tasks (apps.ops.schedule): created or re-timed after every migrate.
    periodic = (
        Periodic("pozol: sample every host's telemetry",
                 "telemetry.collect", "TELEMETRY_INTERVAL"),
        Periodic("pozol: roll telemetry up, prune it",
                 "telemetry.maintain", "TELEMETRY_ROLLUP_INTERVAL"),
    )

    def ready(self) -> None:
        from apps.telemetry import host_page

        host_page.register()
