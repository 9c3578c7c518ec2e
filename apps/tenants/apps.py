from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "apps.tenants"
    label = "tenants"

    def ready(self) -> None:
        from apps.accounts import services as accounts
        from apps.tenants import services

        # A tenant admin lists and revokes its members' tokens.
        accounts.TOKEN_MANAGERS.append(services.managed_users)
