"""`Idempotency-Key` on the POSTs that start work: a repeat is answered, not redone.

A client that lost an answer (a timeout, a dropped connection) sends the same
request again with the same key; within IDEMPOTENCY_WINDOW it gets the first
answer (status and body, and `Idempotent-Replayed: true`), and no second
operation starts. Keys are per user. The same key with another body (or on
another path) is a 409 (`idempotency_key_reused`), and so is a repeat while the
first is still running (`idempotency_key_in_flight`: retry later), both in the
one error shape. A refused first request (any non-2xx)
keeps nothing, so the client may fix it and use the key again.

The reservation is an INSERT under a unique (user, key) constraint made before
the view runs, so of two concurrent duplicates exactly one runs. A one-time
secret in the first answer (a clone's password, a token) is not kept: the
replay says "" in its place, since PoZoL stores no such secret in clear.

Applied with `IdempotentPosts`, a mixin of every API view whose POST starts an
Operation (tests/api/test_idempotency.py checks that none is missing).
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from apps.api.models import IdempotentRequest

HEADER = "Idempotency-Key"
IDEMPOTENCY_WINDOW = timedelta(hours=24)
KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"  # printable ASCII, no spaces
KEY = re.compile(KEY_PATTERN)
SECRETS = frozenset({"password", "secret", "token", "private_key"})


class KeyReused(exceptions.APIException):
    # 409 rather than the IETF draft's 422: the request clashes with what exists (the
    # key's first request), as every other clash in this API is a 409.
    status_code = status.HTTP_409_CONFLICT
    default_code = "idempotency_key_reused"
    default_detail = ("This Idempotency-Key was used with another request (another body "
                      "or path) in the last 24 hours; use a new key for a new request.")


class KeyInFlight(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "idempotency_key_in_flight"
    default_detail = ("A request with this Idempotency-Key is still being answered; "
                      "ask again in a moment to get its answer.")


class _Replay(Exception):
    def __init__(self, row: IdempotentRequest) -> None:
        self.row = row


class IdempotentPosts:
    """Mixin for an APIView: POSTs honour Idempotency-Key (documented on them by
    apps.api.schema)."""

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        request.idempotent_row = None
        key = request.headers.get(HEADER)
        if request.method != "POST" or key is None or not request.user.is_authenticated:
            return
        if not KEY.match(key):
            raise exceptions.ValidationError(
                {HEADER: ["give 1 to 255 printable ASCII characters, no spaces"]})
        request.idempotent_row = reserve(request.user, key, request.path,
                                         fingerprint(request.path, request.data))

    def handle_exception(self, exc):
        if isinstance(exc, _Replay):
            return Response(exc.row.body, status=exc.row.status,
                            headers={"Idempotent-Replayed": "true"})
        return super().handle_exception(exc)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        row = getattr(request, "idempotent_row", None)
        if row is not None:
            keep(row, response)
        return response


def fingerprint(path: str, data) -> str:
    text = json.dumps([path, data], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def reserve(user, key: str, path: str, print_: str) -> IdempotentRequest:
    """The new reservation, or _Replay / KeyReused / KeyInFlight for a key in use."""
    # Past the window a key is free again; expired rows go here (an indexed range),
    # so the table holds a day of keys without a task of its own.
    IdempotentRequest.objects.filter(created_at__lt=timezone.now() - IDEMPOTENCY_WINDOW).delete()
    try:
        with transaction.atomic():
            return IdempotentRequest.objects.create(user=user, key=key, path=path[:500],
                                                    fingerprint=print_)
    except IntegrityError:
        pass
    first = IdempotentRequest.objects.filter(user=user, key=key).first()
    if first is None:  # the first was refused and let go meanwhile: ask again
        raise KeyInFlight()
    if first.fingerprint != print_:
        raise KeyReused()
    if first.status is None:
        raise KeyInFlight()
    raise _Replay(first)


def keep(row: IdempotentRequest, response) -> None:
    """A 2xx answer is kept for repeats; anything else frees the key."""
    if not 200 <= response.status_code < 300:
        IdempotentRequest.objects.filter(pk=row.pk).delete()
        return
    IdempotentRequest.objects.filter(pk=row.pk).update(
        status=response.status_code,
        body=_without_secrets(json.loads(JSONRenderer().render(response.data))))


def _without_secrets(data):
    if isinstance(data, dict):
        return {k: "" if k in SECRETS and isinstance(v, str) else _without_secrets(v)
                for k, v in data.items()}
    if isinstance(data, list):
        return [_without_secrets(v) for v in data]
    return data

