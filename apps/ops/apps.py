from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "apps.ops"
    label = "ops"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from apps.ops.schedule import ensure_periodic_tasks

        post_migrate.connect(ensure_periodic_tasks, sender=self)
