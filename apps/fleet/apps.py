from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "apps.fleet"
    label = "fleet"

    def ready(self) -> None:
        from apps.fleet import host_page, steps  # noqa: F401  registers the operation kinds

        host_page.register()
