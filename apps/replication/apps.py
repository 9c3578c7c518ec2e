from django.apps import AppConfig

from apps.ops.schedule import Periodic


class ReplicationConfig(AppConfig):
    name = "apps.replication"
    label = "replication"
    # Beat tasks (apps.ops.schedule): created or re-timed after every migrate.
    periodic = (
        Periodic("pozol: run due replication links, check their lag",
                 "replication.tick", "REPLICATION_TICK_INTERVAL"),
    )

    def ready(self) -> None:
        from apps.replication import alert_kinds, host_page, services, steps  # noqa: F401
        from apps.replication.pruning import protected_snapshots
        from apps.snapshots import protection

        host_page.register()
        protection.PROTECTORS.append(protected_snapshots)
        protection.LISTENERS.append(services.after_policy_snapshot)
