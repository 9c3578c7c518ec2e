from django.apps import AppConfig


class ReplicationConfig(AppConfig):
    name = "apps.replication"
    label = "replication"

    def ready(self) -> None:
        from apps.replication import host_page, services, steps  # noqa: F401  registers kinds
        from apps.replication.pruning import protected_snapshots
        from apps.snapshots import protection

        host_page.register()
        protection.PROTECTORS.append(protected_snapshots)
        protection.LISTENERS.append(services.after_policy_snapshot)
