from django.apps import AppConfig

from apps.ops.schedule import Periodic, ensure_periodic_tasks


class OpsConfig(AppConfig):
    name = "apps.ops"
    label = "ops"
    # Beat tasks (apps.ops.schedule): created or re-timed after every migrate.
    periodic = (
        Periodic("pozol: re-deliver lost and due operation steps",
                 "ops.sweep", "SWEEP_INTERVAL"),
        Periodic("pozol: delete operations past their retention",
                 "ops.purge", "OPERATION_PURGE_INTERVAL"),
    )

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        post_migrate.connect(ensure_periodic_tasks, sender=self)
