"""API rate limits kept in the shared cache (Redis), so every web process counts together.

Rates are read from settings on every request rather than once at import (DRF's
default), so a changed setting takes effect without re-importing the classes.

A limit must never turn a Redis outage into failed requests: while the shared cache
does not answer, each process counts in its own memory (with a warning in the log)
and goes back to Redis a few seconds later.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.cache import cache as shared_cache
from django.core.cache.backends.locmem import LocMemCache
from django.http import HttpRequest
from redis import RedisError
from rest_framework import throttling
from rest_framework.exceptions import Throttled
from rest_framework.settings import api_settings

log = logging.getLogger("pozol.accounts")
RETRY_SHARED_AFTER = 5.0  # seconds: not one connection attempt per request while away


class FallbackCache:
    """The shared cache, or this process's own while the shared one fails."""

    def __init__(self) -> None:
        self.local = LocMemCache("pozol-rate-limits", {})
        self.away_until = 0.0

    def get(self, key: str, default: Any = None) -> Any:
        return self._call("get", key, default)

    def set(self, key: str, value: Any, timeout: float | None = None) -> None:
        self._call("set", key, value, timeout)

    def _call(self, method: str, *args: Any) -> Any:
        if time.monotonic() >= self.away_until:
            try:
                return getattr(shared_cache, method)(*args)
            except RedisError as error:
                self.away_until = time.monotonic() + RETRY_SHARED_AFTER
                log.warning("Redis does not answer (%s): API rate limits count in this "
                            "process alone for %.0f s", error, RETRY_SHARED_AFTER)
        return getattr(self.local, method)(*args)


_counts = FallbackCache()


def client_ip(request: HttpRequest) -> str:
    """The client's address, honouring REST_FRAMEWORK["NUM_PROXIES"] (POZOL_PROXY_COUNT).

    Shared by the API throttles and the sign-in lockout so both see the same client.
    """
    return throttling.BaseThrottle().get_ident(request)


class _CurrentRates:
    cache = _counts

    def get_rate(self) -> str:
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]


class AnonRateThrottle(_CurrentRates, throttling.AnonRateThrottle):
    pass


class UserRateThrottle(_CurrentRates, throttling.UserRateThrottle):
    pass


class FailedTokenThrottle(_CurrentRates, throttling.SimpleRateThrottle):
    """Counts wrong API tokens per client address; past the rate, wrong tokens get 429.

    Only failing attempts are counted and refused (authentication.py): a valid token
    from the same address, behind the same proxy or NAT, still gets in.
    """

    scope = "failed_token"

    def __init__(self, request: HttpRequest) -> None:
        super().__init__()
        self.request = request
        self.key = self.cache_format % {"scope": self.scope, "ident": client_ip(request)}

    def get_cache_key(self, request, view) -> str:
        return self.key

    def refuse_if_exhausted(self) -> None:
        history = self.cache.get(self.key, [])
        now = self.timer()
        recent = [moment for moment in history if moment > now - self.duration]
        if len(recent) >= self.num_requests:
            self.history, self.now = recent, now
            raise Throttled(wait=self.wait(),
                            detail="Too many failed token authentications from this address.")

    def record_failure(self) -> None:
        now = self.timer()
        history = [m for m in self.cache.get(self.key, []) if m > now - self.duration]
        self.cache.set(self.key, [now, *history], self.duration)
