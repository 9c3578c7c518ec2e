from django.apps import AppConfig

from apps.ops.schedule import Periodic


class DrillsConfig(AppConfig):
    name = "apps.drills"
    label = "drills"
    # Beat tasks (apps.ops.schedule): created or re-timed after every migrate.
    periodic = (
        Periodic("pozol: run due restore drills",
                 "drills.tick", "DRILL_TICK_INTERVAL"),
        Periodic("pozol: find and remove orphan clones",
                 "drills.reconcile", "RECONCILE_INTERVAL"),
    )

    def ready(self) -> None:
        from apps.clones import services as clones
        from apps.drills import alert_kinds, host_page, services, steps  # noqa: F401
        from apps.replication import readers

        host_page.register()
        readers.READERS.append(services.replaying)
        clones.PORT_HOLDERS.append(services.disposable_ports)
