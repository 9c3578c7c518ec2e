from django.apps import AppConfig


class DrillsConfig(AppConfig):
    name = "apps.drills"
    label = "drills"

    def ready(self) -> None:
        from apps.drills import host_page, steps  # noqa: F401  registers kinds

        host_page.register()
