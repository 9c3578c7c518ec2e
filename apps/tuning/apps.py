from django.apps import AppConfig


class TuningConfig(AppConfig):
    name = "apps.tuning"
    label = "tuning"

    def ready(self) -> None:
        from apps.tuning import drift, steps  # noqa: F401  operation kinds and signal receivers
