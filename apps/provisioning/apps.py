from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "apps.provisioning"
    label = "provisioning"

    def ready(self) -> None:
        from apps.provisioning import steps  # noqa: F401  registers the operation kinds
