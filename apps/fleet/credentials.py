"""SSH private keys at rest: encrypted with POZOL_CREDENTIAL_KEY (Fernet).

Several comma-separated keys may be given: the first encrypts, all decrypt, so
the key can be rotated without losing stored credentials.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class CredentialError(Exception):
    pass


def _cipher() -> MultiFernet:
    keys = [k.strip() for k in settings.CREDENTIAL_KEY.split(",") if k.strip()]
    if not keys:
        raise ImproperlyConfigured(
            "POZOL_CREDENTIAL_KEY is not set: it encrypts SSH keys at rest. Make one with "
            "`python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())'`"
        )
    try:
        return MultiFernet([Fernet(k) for k in keys])
    except ValueError as exc:
        raise ImproperlyConfigured(f"POZOL_CREDENTIAL_KEY is not a Fernet key: {exc}") from None


def encrypt(secret: str) -> str:
    return _cipher().encrypt(secret.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _cipher().decrypt(token.encode()).decode()
    except InvalidToken:
        raise CredentialError(
            "the stored SSH key cannot be decrypted with POZOL_CREDENTIAL_KEY "
            "(was the key changed?)"
        ) from None
