from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    name = "apps.experiments"
    label = "experiments"

    def ready(self) -> None:
        from apps.experiments import steps  # noqa: F401  registers the operation kind
