import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken, hash_token

pytestmark = pytest.mark.django_db


def token_from_command(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command("create_api_token", *args, stdout=out, stderr=StringIO())
    return out.getvalue().strip()


def test_the_command_prints_a_token_that_is_stored_only_hashed(operator):
    raw = token_from_command(operator.username)
    token = ApiToken.objects.get(user=operator)
    assert raw.startswith("pzl_") and token.digest == hash_token(raw)
    assert not ApiToken.objects.filter(digest=raw).exists()


def test_the_command_creates_an_operator_only_when_asked(django_user_model):
    with pytest.raises(CommandError, match="pass --create"):
        token_from_command("newbie")
    raw = token_from_command("newbie", "--create")
    user = django_user_model.objects.get(username="newbie")
    assert user.is_staff and ApiToken.objects.get(user=user).digest == hash_token(raw)


def test_a_token_authenticates_and_a_wrong_one_gets_the_api_error_format(operator):
    raw = token_from_command(operator.username)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    assert client.get("/api/hosts/").status_code == 200

    client.credentials(HTTP_AUTHORIZATION="Token pzl_wrong")
    response = client.get("/api/hosts/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_an_outsider_gets_nothing():
    response = APIClient().get("/api/hosts/")
    assert response.status_code == 401
    assert set(response.json()["error"]) == {"code", "message", "fields"}


def test_an_expired_token_is_refused_with_a_clear_message(operator):
    from datetime import timedelta

    from django.utils import timezone

    _, raw = ApiToken.objects.issue(operator, "short", expires_at=timezone.now()
                                    + timedelta(minutes=1))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    assert client.get("/api/hosts/").status_code == 200

    ApiToken.objects.filter(user=operator).update(expires_at=timezone.now())
    response = client.get("/api/hosts/")
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "token_expired" and "expired" in error["message"]


def test_the_command_makes_tokens_that_expire_after_the_days_asked(operator):
    from datetime import timedelta

    from django.utils import timezone

    raw = token_from_command(operator.username, "--expires-in", "30")
    token = ApiToken.objects.get(digest=hash_token(raw))
    expected = timezone.now() + timedelta(days=30)
    assert abs((token.expires_at - expected).total_seconds()) < 60
    never = ApiToken.objects.get(digest=hash_token(token_from_command(operator.username)))
    assert never.expires_at is None
    with pytest.raises(CommandError, match="at least 1"):
        token_from_command(operator.username, "--expires-in", "0")


def test_adding_tokens_in_the_admin_issues_real_ones_shown_once(client, django_user_model):
    admin_user = django_user_model.objects.create_superuser("root", password="x" * 16)
    client.force_login(admin_user)
    shown = []
    for label in ("first", "second"):  # a second add used to be a 500 (empty unique digest)
        response = client.post("/admin/accounts/apitoken/add/", {
            "user": admin_user.pk, "name": label, "expires_at_0": "", "expires_at_1": ""})
        assert response.status_code == 200, response.content[:500]
        assert "no-store" in response["Cache-Control"]
        page = response.content.decode()
        raw = page.split('<code id="issued-token">')[1].split("</code>")[0]
        shown.append(raw)
        token = ApiToken.objects.get(name=label)
        assert token.digest == hash_token(raw) and token.hint == raw[:8]

    client.logout()
    api = APIClient()
    for raw in shown:
        api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
        assert api.get("/api/hosts/").status_code == 200

    client.force_login(admin_user)
    change = client.get(f"/admin/accounts/apitoken/{ApiToken.objects.get(name='first').pk}/change/")
    assert shown[0] not in change.content.decode() and "Expires at" in change.content.decode()
