from django.apps import AppConfig


class RolloutsConfig(AppConfig):
    name = "apps.rollouts"
    label = "rollouts"

    def ready(self) -> None:
        from apps.rollouts import host_page, steps  # noqa: F401  registers the kind, events
        host_page.register()
