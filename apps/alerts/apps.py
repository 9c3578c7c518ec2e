from django.apps import AppConfig

from apps.ops.schedule import Periodic


class AlertsConfig(AppConfig):
    name = "apps.alerts"
    label = "alerts"
    # Beat tasks (apps.ops.schedule): created or re-timed after every migrate.
    periodic = (
        Periodic("pozol: evaluate alert rules, send due deliveries",
                 "alerts.tick", "ALERT_INTERVAL"),
        Periodic("pozol: start due pool scrubs",
                 "alerts.scrub_tick", "SCRUB_TICK_INTERVAL"),
    )

    def ready(self) -> None:
        from apps.alerts import alert_kinds, rules, steps  # noqa: F401  registers kinds
        from apps.alerts.models import Alert
        from apps.common import alert_kinds as registry
        from apps.fleet import capacity

        # Every app raises its alerts through its kinds; they are kept here.
        registry.set_store(Alert)
        # Discovery's pool_capacity alert uses the operator's threshold.
        capacity.set_threshold_source(rules.pool_capacity_threshold)
