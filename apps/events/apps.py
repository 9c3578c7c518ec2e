from django.apps import AppConfig

from apps.ops.schedule import Periodic


class EventsConfig(AppConfig):
    name = "apps.events"
    label = "events"
    # Beat: re-send deliveries whose message was lost (the broker was away).
    periodic = (
        Periodic("pozol: re-send lost event deliveries", "events.tick", "ALERT_INTERVAL"),
    )

    def ready(self) -> None:
        from apps.common import events as registry
        from apps.events import record

        # Every app announces its events through its kinds; they are kept here.
        registry.set_sink(record.record)
