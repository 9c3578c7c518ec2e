from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from apps.accounts.models import ApiToken, hash_token
from apps.accounts.throttling import FailedTokenThrottle


class HashedTokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token pzl_...`, looked up by its SHA-256 digest.

    Wrong tokens are counted per client address: past POZOL_THROTTLE_FAILED_TOKEN
    every wrong token from that address gets 429 until the window passes, so guessing
    tokens is not free. A valid token is never refused for them: behind a proxy or NAT
    one address is every client, and one client's typos must not lock out the rest.
    A guesser learns nothing from 429 against 401 (both refuse), and a token carries
    32 random bytes, so letting a right guess through costs nothing real.
    """

    def authenticate(self, request):
        self._failures = FailedTokenThrottle(request)
        return super().authenticate(request)

    def authenticate_credentials(self, key: str):
        token = (
            ApiToken.objects.select_related("user").filter(digest=hash_token(key)).first()
        )
        if token is None or token.revoked_at is not None or not token.user.is_active:
            self._fail()
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        if token.is_expired():
            self._fail()
            raise exceptions.AuthenticationFailed(
                f"This token expired at {token.expires_at.isoformat()}; make a new one.",
                code="token_expired")
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        return token.user, token

    def _fail(self) -> None:
        """429 while this address is over its limit (the failure is not counted then),
        else count it."""
        self._failures.refuse_if_exhausted()
        self._failures.record_failure()


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
