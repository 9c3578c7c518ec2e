from django.apps import AppConfig


class RolloutsConfig(AppConfig):
    name = "apps.rollouts"
    label = "rollouts"

    def ready(self) -> None:
        from apps.rollouts import steps  # noqa: F401  registers the kind and the events
