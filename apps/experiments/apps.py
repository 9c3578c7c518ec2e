from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    name = "apps.experiments"
    label = "experiments"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from apps.experiments import services, steps  # noqa: F401  registers the operation kind
        from apps.ops.models import Operation
        from apps.tuning import evidence

        evidence.FINDERS.append(services.winners)
        post_save.connect(services.after_operation_saved, sender=Operation,
                          dispatch_uid="experiments.drift_after_experiment")
