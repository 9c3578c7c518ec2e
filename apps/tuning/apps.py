from django.apps import AppConfig


class TuningConfig(AppConfig):
    name = "apps.tuning"
    label = "tuning"

    def ready(self) -> None:
        from apps.tuning import host_page, receivers, steps  # noqa: F401  kinds and receivers

        host_page.register()
