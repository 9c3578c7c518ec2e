from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    name = "apps.telemetry"
    label = "telemetry"

    def ready(self) -> None:
        from apps.telemetry import host_page

        host_page.register()
