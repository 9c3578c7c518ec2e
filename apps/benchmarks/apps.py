from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "apps.benchmarks"
    label = "benchmarks"

    def ready(self) -> None:
        from apps.benchmarks import host_page, steps  # noqa: F401  registers the operation kind

        host_page.register()
