"""One error shape for every API error, whatever raised it (issue 6's contract)."""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError

from apps.ops import engine
from apps.ops.models import Operation

pytestmark = pytest.mark.django_db


def error_of(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "fields"}
    assert body["error"]["message"] and "ErrorDetail" not in body["error"]["message"]
    return body["error"]


def test_a_url_under_api_that_matches_no_route_is_a_json_404(api):
    assert error_of(api.get("/api/no-such-thing/"), 404)["code"] == "not_found"


def test_a_missing_object_is_a_json_404(api):
    assert error_of(api.get("/api/hosts/999999/"), 404)["code"] == "not_found"


def test_no_credentials_is_a_json_401(client):
    assert error_of(client.get("/api/hosts/"), 401)["code"] == "not_authenticated"


def test_a_method_not_allowed_is_a_json_405(api):
    assert error_of(api.delete("/api/operations/"), 405)["code"] == "method_not_allowed"


def test_a_body_that_is_not_json_is_a_json_415(api):
    response = api.post("/api/profiles/", "name=x",
                        content_type="application/x-www-form-urlencoded")
    assert error_of(response, 415)["code"] == "unsupported_media_type"


def test_a_body_over_the_upload_limit_is_a_json_413(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"name": "x" * 2000, "settings": {}})
    response = api.post("/api/profiles/", body, content_type="application/json")
    assert error_of(response, 413)["code"] == "too_large"


@pytest.mark.parametrize("depth", [33, 2000, 200_000])
def test_deeply_nested_json_is_a_400_not_a_recursion_error(api, depth):
    body = "[" * depth + "]" * depth
    response = api.post("/api/profiles/", body, content_type="application/json")
    assert error_of(response, 400)["code"] == "parse_error"


def test_nesting_inside_strings_does_not_count(api):
    body = json.dumps({"name": "[[[[" * 100, "settings": "{{{{" * 100})
    response = api.post("/api/profiles/", body, content_type="application/json")
    assert "nested" not in error_of(response, 400)["message"]


@pytest.mark.parametrize("path", ["/api/operations/", "/api/plans/", "/api/benchmarks/",
                                  "/api/validations/"])
@pytest.mark.parametrize("value", ["abc", "1.5", "null", "true", "", "99999999999999999999", "0"])
def test_a_list_filter_that_is_not_an_id_is_a_400_naming_it(api, path, value):
    error = error_of(api.get(path, {"host": value}), 400)
    assert set(error["fields"]) == {"host"} and error["message"].startswith("host: ")


@pytest.mark.parametrize("query", [{"status": "fail\x00ed"}, {"status": ""},
                                   {"status": "nope"}, {"kind": "fleet\x00discover"}])
def test_a_nul_byte_or_a_bad_choice_in_a_filter_is_a_400(api, query):
    error_of(api.get("/api/operations/", query), 400)


def test_an_empty_page_number_is_refused_like_any_bad_one(api):
    error_of(api.get("/api/operations/", {"page": ""}), 404)
    error_of(api.get("/api/operations/", {"page": "abc"}), 404)


@pytest.mark.parametrize("body", [{"name": 0}, {"name": True}, {"name": ["x"]}])
def test_text_fields_take_text_only(api, body):
    response = api.post("/api/profiles/1/copy/", body, format="json")
    assert "name" in error_of(response, 400)["fields"]


def test_text_over_its_maximum_length_is_refused_even_when_it_ends_in_spaces(api):
    # The schema says maxLength 2000; trimming first let 2,001 characters through.
    body = {"name": "Long description", "description": "x" * 2000 + " ",
            "settings": {"zfs": {}, "module": {}, "sysctl": {}, "postgres": {}}}
    assert "description" in error_of(api.post("/api/profiles/", body), 400)["fields"]
    body["description"] = "x" * 2000
    assert api.post("/api/profiles/", body).status_code == 201


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\t"])
def test_a_name_with_a_line_break_or_tab_at_an_end_is_refused_not_trimmed(api, ending):
    """'acme\\n' was stored as 'acme': what was sent is not what was saved."""
    for path, body, field in [
            ("/api/tenants/", {"name": f"Acme{ending}"}, "name"),
            ("/api/tenants/", {"name": f"{ending}Acme"}, "name"),
            ("/api/profiles/1/copy/", {"name": f"Mine{ending}"}, "name"),
            ("/api/alert-channels/", {"name": f"mail{ending}", "kind": "email",
                                      "target": "ops@example.com"}, "name")]:
        response = api.post(path, body, format="json")
        assert field in error_of(response, 400)["fields"], (path, body)
    # Spaces around a name are still forgiven.
    assert api.post("/api/tenants/", {"name": " Acme "}, format="json").json()["name"] == "Acme"


def test_a_database_outage_is_a_json_503(api, monkeypatch):
    def away(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr("apps.ops.api.OperationViewSet.list", away)
    assert error_of(api.get("/api/operations/"), 503)["code"] == "unavailable"


def test_an_unexpected_exception_is_a_logged_json_500(api, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("apps.ops.api.OperationViewSet.list", broken)
    assert error_of(api.get("/api/operations/"), 500)["code"] == "server_error"
    assert "a bug" in caplog.text


def test_a_domain_refusal_reads_as_a_sentence(api, replayed_host):
    operation = engine.start("fleet.discover", host=replayed_host)
    Operation.objects.filter(pk=operation.pk).update(status=Operation.Status.SUCCEEDED)
    response = api.post(f"/api/hosts/{replayed_host.pk}/confirm-host-key/",
                        {"fingerprint": "SHA256:" + "A" * 43}, format="json")
    error = error_of(response, 400)
    assert error["code"] == "fingerprint_mismatch"
    assert error["message"].startswith("That is not the fingerprint")


def test_the_schema_documents_the_error_shape_on_every_operation(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "Error" in schema["components"]["schemas"]
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            assert {"400", "401", "404", "500", "503"} <= set(operation["responses"]), path
            if method in {"post", "put", "patch", "delete"}:
                assert "409" in operation["responses"], (method, path)
