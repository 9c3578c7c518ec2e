from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken, hash_token
from apps.tenants.models import Membership
from tests.tenants import factories

pytestmark = pytest.mark.django_db


def client_with(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client


def test_a_user_makes_a_token_shown_once_that_carries_only_its_rights():
    acme = factories.tenant("Acme")
    ana = factories.api_as(factories.member(acme, "ana"))
    made = ana.post("/api/tokens/", {"name": "ci", "expires_at": None})
    assert made.status_code == 201
    raw = made.json()["token"]
    assert ApiToken.objects.get(pk=made.json()["id"]).digest == hash_token(raw)
    listed = ana.get("/api/tokens/").json()["results"]
    assert {"ci", "tests"} == {t["name"] for t in listed}
    assert all("token" not in t for t in listed) and raw not in str(listed)
    fresh = client_with(raw)
    assert fresh.get(f"/api/tenants/{acme.pk}/").status_code == 200
    assert fresh.get("/api/hosts/").status_code == 403  # no more than its owner


def test_a_revoked_token_gets_401_in_the_api_error_shape():
    ana = factories.member(factories.tenant("Acme"), "ana")
    _, raw = ApiToken.objects.issue(ana, "doomed")
    client = client_with(raw)
    token = ApiToken.objects.get(digest=hash_token(raw))
    revoked = client.post(f"/api/tokens/{token.pk}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    response = client.get("/api/tokens/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"
    assert set(response.json()["error"]) == {"code", "message", "fields"}


def test_an_expiry_in_the_past_is_refused_and_one_in_the_future_is_kept():
    ana = factories.api_as(factories.member(factories.tenant("Acme"), "ana"))
    past = (timezone.now() - timedelta(minutes=1)).isoformat()
    refused = ana.post("/api/tokens/", {"name": "x", "expires_at": past})
    assert refused.status_code == 400 and "expires_at" in refused.json()["error"]["fields"]
    soon = timezone.now() + timedelta(days=2)
    made = ana.post("/api/tokens/", {"name": "x", "expires_at": soon.isoformat()}).json()
    assert made["state"] == "active" and made["expires_at"].startswith(soon.date().isoformat())


def test_who_sees_and_revokes_whose_tokens(api, operator):
    acme, other = factories.tenant("Acme"), factories.tenant("Other")
    admin = factories.member(acme, "ana", Membership.Role.TENANT_ADMIN)
    bob = factories.member(acme, "bob")
    olaf = factories.member(other, "olaf")
    bobs, _ = ApiToken.objects.issue(bob, "bob's")
    olafs, _ = ApiToken.objects.issue(olaf, "olaf's")
    admins, _ = ApiToken.objects.issue(admin, "ana's")
    as_admin, as_bob = factories.api_as(admin), factories.api_as(bob)
    seen = {t["name"] for t in as_admin.get("/api/tokens/").json()["results"]}
    assert {"bob's", "ana's"} <= seen and "olaf's" not in seen
    assert as_bob.get(f"/api/tokens/{admins.pk}/").status_code == 404
    assert as_bob.post(f"/api/tokens/{admins.pk}/revoke/").status_code == 404
    assert as_admin.post(f"/api/tokens/{olafs.pk}/revoke/").status_code == 404
    assert as_admin.post(f"/api/tokens/{bobs.pk}/revoke/").json()["revoked_by"] == "ana"
    assert api.post(f"/api/tokens/{olafs.pk}/revoke/").json()["revoked_by"] == operator.username


def test_the_tokens_page_makes_a_token_shows_it_once_and_revokes_it(client):
    ana = factories.member(factories.tenant("Acme"), "ana")
    client.force_login(ana)
    made = client.post("/account/tokens/", {"name": "laptop", "expires_in_days": "30"})
    token = ApiToken.objects.get(user=ana, name="laptop")
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    raw = made.content.decode().split('id="issued-raw">')[1].split("<")[0]
    assert token.digest == hash_token(raw)
    assert raw not in client.get("/account/tokens/").content.decode()
    refused = client.post("/account/tokens/", {"name": "x", "expires_in_days": "0"})
    assert b"errorlist" in refused.content
    client.post(f"/account/tokens/{token.pk}/revoke/")
    token.refresh_from_db()
    assert token.state == "revoked" and token.revoked_by == ana
