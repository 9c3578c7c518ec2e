from django.apps import AppConfig


class ReplicationConfig(AppConfig):
    name = "apps.replication"
    label = "replication"

    def ready(self) -> None:
        from apps.replication import steps  # noqa: F401  registers kinds
