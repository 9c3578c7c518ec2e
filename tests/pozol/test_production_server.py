"""Production settings, through a real gunicorn (two workers) started with POZOL_*
variables: security headers, HTTPS behind a proxy, shared rate limits, token expiry."""

from __future__ import annotations

from datetime import timedelta

import pytest
import requests
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.utils import timezone

from apps.accounts.models import ApiToken
from tests.webserver import Gunicorn

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "correct horse battery"


@pytest.fixture
def person(django_user_model):
    # The test settings hash with MD5, which production settings do not accept.
    hashed = PBKDF2PasswordHasher().encode(PASSWORD, "testsalt1234", iterations=1000)
    return django_user_model.objects.create(username="paula", password=hashed, is_staff=True)


@pytest.fixture
def start(tmp_path):
    servers: list[Gunicorn] = []

    def start(**env: str) -> Gunicorn:
        servers.append(Gunicorn(tmp_path, **env))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()
        # Shown with a failed test's report: what the server said, such as why a
        # worker never answered.
        print(f"gunicorn on {server.url}:\n{server.output()[-3000:]}")


def sign_in(server: Gunicorn, password: str, **headers: str) -> requests.Response:
    form = requests.get(f"{server.url}/login/", headers=headers, timeout=10)
    csrf = form.cookies["csrftoken"]
    # Sent by hand: a client keeps Secure cookies to itself over plain http, and the
    # proxy in front is what would speak https.
    return requests.post(f"{server.url}/login/", timeout=10, allow_redirects=False, headers={
        **headers, "Cookie": f"csrftoken={csrf}",
        "Referer": f"{server.url.replace('http:', 'https:')}/login/"}, data={
        "username": "paula", "password": password, "csrfmiddlewaretoken": csrf})


def test_behind_a_tls_proxy_every_answer_is_hardened(start, person):
    server = start(POZOL_BEHIND_TLS_PROXY="true")
    plain = requests.get(f"{server.url}/login/", allow_redirects=False, timeout=10)
    assert plain.status_code == 301
    assert plain.headers["Location"] == f"{server.url.replace('http:', 'https:')}/login/"

    https = {"X-Forwarded-Proto": "https"}
    page = requests.get(f"{server.url}/login/", headers=https, timeout=10)
    assert page.status_code == 200
    assert page.headers["Strict-Transport-Security"] == "max-age=31536000"
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Referrer-Policy"] == "same-origin"
    assert page.headers["X-Frame-Options"] == "DENY"
    policy = page.headers["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["default-src"] == "'self'" and directives["script-src"] == "'self'"
    assert "frame-ancestors 'none'" in policy
    assert "secure" in page.headers["Set-Cookie"].lower()  # the CSRF cookie

    signed_in = sign_in(server, PASSWORD, **https)
    assert signed_in.status_code == 302, signed_in.text[:500]
    assert "sessionid=" in signed_in.headers["Set-Cookie"]
    assert "secure" in signed_in.headers["Set-Cookie"].lower()


def test_the_plain_http_demo_is_not_redirected_and_keeps_plain_cookies(start, person):
    server = start()  # as `make run` starts it: POZOL_DEBUG off, no HTTPS declared
    page = requests.get(f"{server.url}/login/", allow_redirects=False, timeout=10)
    assert page.status_code == 200
    assert "Strict-Transport-Security" not in page.headers
    assert "secure" not in page.headers["Set-Cookie"].lower()
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert sign_in(server, PASSWORD).status_code == 302


def test_wrong_tokens_and_passwords_are_limited_across_workers(start, person):
    server = start(POZOL_THROTTLE_FAILED_TOKEN="4/minute", POZOL_LOGIN_FAILURE_LIMIT="3")
    _, good = ApiToken.objects.issue(person, "good")
    _, old = ApiToken.objects.issue(person, "old", expires_at=timezone.now() - timedelta(1))

    def hosts(token: str) -> requests.Response:
        # A fresh connection each time, so both workers take requests.
        return requests.get(f"{server.url}/api/hosts/", timeout=10,
                            headers={"Authorization": f"Token {token}", "Connection": "close"})

    expired = hosts(old)
    assert expired.status_code == 401 and expired.json()["error"]["code"] == "token_expired"
    assert hosts(good).status_code == 200
    for attempt in range(3):  # with the expired one, four failures
        assert hosts(f"pzl_guess{attempt}").status_code == 401
    throttled = hosts("pzl_guess-again")
    assert throttled.status_code == 429, throttled.text
    assert throttled.json()["error"]["code"] == "throttled"
    assert int(throttled.headers["Retry-After"]) > 0
    assert hosts(good).status_code == 200  # others' wrong guesses never lock a valid one out
    assert hosts("pzl_guess-more").status_code == 429  # but guessing still waits

    for _ in range(2):
        wrong = sign_in(server, "not the password")
        assert wrong.status_code == 200 and "Wrong user name or password" in wrong.text
    third = sign_in(server, "not the password")  # the limit: locked from this one on
    assert third.status_code == 429 and "Sign-in locked" in third.text
    locked = sign_in(server, PASSWORD)  # even the right password, while locked
    assert locked.status_code == 429
    assert "after 3 failures" in locked.text and 'class="brand"' in locked.text


@pytest.mark.parametrize(("variable", "value", "says"), [
    ("POZOL_THROTTLE_USER", "lots", "POZOL_THROTTLE_USER='lots': expected a rate like 60/minute"),
    ("POZOL_THROTTLE_FAILED_TOKEN", "0/minute", "expected a rate"),
    ("POZOL_LOGIN_FAILURE_LIMIT", "0", "must be at least 1"),
    ("POZOL_BEHIND_TLS_PROXY", "perhaps", "expected true/false"),
])
def test_a_bad_security_setting_stops_start_up(variable, value, says):
    from tests.pozol.test_wiring import python

    result = python("import django; django.setup()", **{variable: value})
    assert result.returncode != 0 and says in result.stderr


def test_the_docs_are_public_only_when_asked():
    from tests.pozol.test_wiring import python

    code = ("import django; django.setup(); from apps.api.docs import docs_are_public;"
            "print(docs_are_public())")
    assert python(code).stdout.strip() == "False"
    assert python(code, POZOL_PUBLIC_API_DOCS="true").stdout.strip() == "True"
