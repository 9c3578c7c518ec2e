"""The OpenAPI schema and Swagger UI: for signed-in users unless made public."""

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_get_neither_docs_nor_schema(client):
    docs = client.get("/api/docs/")
    assert docs.status_code == 302 and docs.url.startswith("/login/?next=/api/docs/")
    assert client.get("/api/docs/?script=").status_code == 302
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 401


def test_a_token_or_a_session_opens_them(api, client, operator):
    assert api.get("/api/schema/").status_code == 200
    client.force_login(operator)
    assert client.get("/api/schema/").status_code == 200
    page = client.get("/api/docs/")
    assert page.status_code == 200 and "<script>" not in page.content.decode()
    script = client.get("/api/docs/?script=").content.decode()
    # Swagger UI's badge would send the schema URL to validator.swagger.io.
    assert '"validatorUrl": null' in script


def test_public_docs_are_open_to_everyone(client, settings):
    public = {**settings.SPECTACULAR_SETTINGS,
              "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"]}
    with override_settings(SPECTACULAR_SETTINGS=public):
        assert client.get("/api/docs/").status_code == 200
        assert APIClient().get("/api/schema/").status_code == 200
