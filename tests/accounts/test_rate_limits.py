"""API rate limits: wrong tokens are limited per address without locking out the
valid tokens of everyone behind it, and the limits never turn a Redis outage into
errors."""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings
from django.test import override_settings
from rest_framework.test import APIClient

from apps.accounts import throttling
from apps.accounts.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def counts_start_afresh():
    """This process's fallback counts, and its pause before asking Redis again, outlive a
    test: the next test would find another's wrong guesses there, and no warning."""
    throttling._counts.local.clear()
    throttling._counts.away_until = 0.0


@pytest.fixture
def failed_token_rate():
    """Three wrong tokens a minute, counted under a prefix of this test alone."""
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "failed_token": "3/minute"}
    cache = {**settings.CACHES["default"], "KEY_PREFIX": f"rate-test-{uuid.uuid4().hex}"}
    with override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK,
                                           "DEFAULT_THROTTLE_RATES": rates},
                           CACHES={**settings.CACHES, "default": cache}):
        yield


def hosts(token: str):
    client = APIClient(REMOTE_ADDR="192.0.2.7")  # one NAT address for every client
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get("/api/hosts/")


def test_wrong_tokens_are_throttled_but_never_lock_out_a_valid_one(operator, failed_token_rate):
    _, good = ApiToken.objects.issue(operator, "good")
    for attempt in range(3):
        assert hosts(f"pzl_guess{attempt}").status_code == 401
    throttled = hosts("pzl_guess-again")
    assert throttled.status_code == 429, throttled.content
    assert throttled.json()["error"]["code"] == "throttled"
    # Someone else's wrong guesses from the same address cost this client nothing.
    assert hosts(good).status_code == 200
    assert hosts("pzl_guess-more").status_code == 429


def test_with_redis_down_tokens_still_get_in_and_wrong_ones_are_counted_here(
        operator, redis_server, caplog):
    """The limits' counts live in Redis; while it is away each process counts on its
    own (with a log line) instead of answering 500."""
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "failed_token": "3/minute"}
    cache = {**settings.CACHES["default"], "LOCATION": redis_server.url(),
             "KEY_PREFIX": f"rate-test-{uuid.uuid4().hex}"}
    _, good = ApiToken.objects.issue(operator, "good")
    with override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK,
                                           "DEFAULT_THROTTLE_RATES": rates},
                           CACHES={**settings.CACHES, "default": cache}):
        assert hosts(good).status_code == 200
        redis_server.stop()

        assert hosts(good).status_code == 200
        for attempt in range(3):
            assert hosts(f"pzl_guess{attempt}").status_code == 401
        assert hosts("pzl_guess-again").status_code == 429
        assert hosts(good).status_code == 200
    assert any("Redis" in r.getMessage() for r in caplog.records
               if r.name == "pozol.accounts" and r.levelname == "WARNING")
