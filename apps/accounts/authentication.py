from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from apps.accounts.models import ApiToken, hash_token


class HashedTokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token pzl_...`, looked up by its SHA-256 digest."""

    def authenticate_credentials(self, key: str):
        token = (
            ApiToken.objects.select_related("user").filter(digest=hash_token(key)).first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        return token.user, token


class HashedTokenScheme(OpenApiAuthenticationExtension):
    target_class = HashedTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <token>`; create one with `manage.py create_api_token`.",
        }
