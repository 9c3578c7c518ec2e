from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "apps.alerts"
    label = "alerts"

    def ready(self) -> None:
        from apps.alerts import rules, steps  # noqa: F401  registers the scrub kind
        from apps.fleet import capacity

        # Discovery's pool_capacity alert uses the operator's threshold.
        capacity.set_threshold_source(rules.pool_capacity_threshold)
