from django.apps import AppConfig

from apps.ops.schedule import Periodic


class TelemetryConfig(AppConfig):
    name = "apps.telemetry"
    label = "telemetry"

    @property
    def periodic(self) -> tuple[Periodic, ...]:
        """Beat tasks (apps.ops.schedule): created or re-timed after every migrate. One
        collect entry per shard (apps.telemetry.shards: POZOL_TELEMETRY_SHARDS)."""
        from apps.telemetry import shards

        return (*shards.periodic(),
                Periodic("pozol: roll telemetry up, prune it",
                         "telemetry.maintain", "TELEMETRY_ROLLUP_INTERVAL"))

    def ready(self) -> None:
        from apps.telemetry import host_page

        host_page.register()
