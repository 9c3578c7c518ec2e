from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "apps.provisioning"
    label = "provisioning"

    def ready(self) -> None:
        from apps.provisioning import host_page, steps  # noqa: F401  registers the kinds

        host_page.register()
