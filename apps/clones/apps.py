from django.apps import AppConfig


class ClonesConfig(AppConfig):
    name = "apps.clones"
    label = "clones"

    def ready(self) -> None:
        from apps.clones import host_page, steps  # noqa: F401  registers kinds

        host_page.register()
