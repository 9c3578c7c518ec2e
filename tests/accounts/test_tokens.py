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
