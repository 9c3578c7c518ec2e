"""The frame every page shares (templates/base.html): error pages inside it, the
favicon, the current section marked, form errors next to their fields, and the
shared formats on the operations pages."""

from datetime import timedelta

import pytest
from django.contrib.staticfiles import finders
from django.test import override_settings
from django.utils import timezone

from apps.ops.models import Operation
from tests.html import parse

pytestmark = pytest.mark.django_db


def current_sections(page) -> list[str]:
    nav = page.find("nav", **{"aria-label": "Sections"})
    return [a.text for a in nav.find_all("a") if a.attrs.get("aria-current") == "page"]


@pytest.mark.parametrize(("url", "section"), [
    ("/", "Fleet"), ("/hosts/add/", "Fleet"), ("/tuning/profiles/", "Profiles"),
    ("/benchmarks/", "Benchmarks"), ("/operations/", "Operations")])
def test_the_navigation_marks_the_current_section_only(signed_in, url, section):
    assert current_sections(parse(signed_in.get(url).content)) == [section]


def test_every_page_links_its_svg_favicon(client):
    page = parse(client.get("/login/").content)
    icon = page.find("link", rel="icon")
    assert icon.attrs["type"] == "image/svg+xml" and icon.attrs["href"].endswith("favicon.svg")
    assert finders.find("favicon.svg")


def test_a_missing_page_is_shown_inside_the_frame(signed_in):
    response = signed_in.get("/hosts/999999/")
    page = parse(response.content)
    assert response.status_code == 404
    assert page.find("h1").text == "Not found"
    assert page.find("a", class_="brand") and current_sections(page) == ["Fleet"]
    assert "/hosts/999999/" in page.find("div", id="not-found").text


def test_an_unknown_address_is_a_framed_page_for_people_and_json_for_the_api(client):
    assert parse(client.get("/no/such/page/").content).find("h1").text == "Not found"
    response = client.get("/api/no-such-endpoint/")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


@override_settings(DEBUG=False, ROOT_URLCONF="tests.pozol.failing_urls")
def test_a_server_error_is_shown_inside_the_frame_without_a_request_context(signed_in):
    signed_in.raise_request_exception = False
    response = signed_in.get("/fails/")
    page = parse(response.content)
    assert response.status_code == 500
    assert page.find("h1").text == "Something went wrong"
    assert page.find("a", class_="brand") and page.find("link", rel="icon")
    assert "error was logged" in page.find("div", id="server-error").text


def test_form_errors_stand_next_to_their_fields(signed_in):
    page = parse(signed_in.post("/hosts/add/", {"name": "", "address": ""}).content)
    name = page.find("input", name="name")
    assert name.attrs["aria-invalid"] == "true"
    errors = page.find("ul", id=name.attrs["aria-describedby"].split()[0])
    assert "errorlist" in errors.attrs["class"] and errors.text


def test_operations_show_start_finish_and_duration(signed_in):
    started = timezone.now() - timedelta(minutes=10)
    operation = Operation.objects.create(
        kind="fleet.discover", subject="db1", step="done", status=Operation.Status.SUCCEEDED,
        started_at=started, finished_at=started + timedelta(seconds=72))
    row = parse(signed_in.get("/operations/").content).find("table", id="operations").rows()[0]
    assert row[-3].endswith("UTC") and row[-2].endswith("UTC") and row[-1] == "1 min 12 s"
    detail = parse(signed_in.get(f"/operations/{operation.pk}/").content)
    assert "took 1 min 12 s" in detail.find("p", id="op-times").text
    assert len(detail.find_all("time")) >= 3
