from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from apps.accounts.models import ApiToken, hash_token
from apps.accounts.throttling import FailedTokenThrottle


class HashedTokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token pzl_...`, looked up by its SHA-256 digest.

    Wrong tokens are counted per client address: past POZOL_THROTTLE_FAILED_TOKEN
    every token from that address gets 429 until the window passes, so guessing
    tokens is not free.
    """

    def authenticate(self, request):
        self._failures = FailedTokenThrottle(request)
        return super().authenticate(request)

    def authenticate_credentials(self, key: str):
        self._failures.refuse_if_exhausted()
        token = (
            ApiToken.objects.select_related("user").filter(digest=hash_token(key)).first()
        )
        if token is None or token.revoked_at is not None or not token.user.is_active:
            self._failures.record_failure()
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        if token.is_expired():
            self._failures.record_failure()
            raise exceptions.AuthenticationFailed(
                f"This token expired at {token.expires_at.isoformat()}; make a new one.",
                code="token_expired")
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
            "description": "`Token <token>`; make one on the Tokens page, with "
                           "`POST /api/tokens/` or with `manage.py create_api_token`.",
        }
