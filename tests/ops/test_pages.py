"""The operation page: following an operation and cancelling it (issue 8, section 2)."""

from __future__ import annotations

import pytest

from apps.ops import engine
from apps.ops.models import Operation
from tests.html import parse

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(replayed_host, delivered) -> Operation:
    return engine.start("fleet.discover", host=replayed_host)


def test_a_running_operation_can_be_cancelled_from_its_page(signed_in, running):
    form = parse(signed_in.get(f"/operations/{running.pk}/").content).find(
        "form", id="cancel-operation")
    assert form.attrs["action"] == f"/operations/{running.pk}/cancel/"
    assert "data-confirm" in form.attrs

    response = signed_in.post(form.attrs["action"])

    assert response.status_code == 302 and response.url == f"/operations/{running.pk}/"
    running.refresh_from_db()
    assert running.status == Operation.Status.CANCELLED
    assert running.error == "cancelled by olga"
    page = parse(signed_in.get(f"/operations/{running.pk}/").content)
    assert not page.find_all("form", id="cancel-operation")
    assert page.find("span", id="op-status").text == "cancelled"


def test_an_ended_operation_stays_as_it_ended(signed_in, running):
    engine.cancel(running, "first")
    signed_in.post(f"/operations/{running.pk}/cancel/")
    running.refresh_from_db()
    assert running.error == "first"


def test_cancel_takes_a_signed_in_post_only(client, signed_in, running):
    assert signed_in.get(f"/operations/{running.pk}/cancel/").status_code == 405
    assert signed_in.post("/operations/999999/cancel/").status_code == 404
    client.logout()
    assert client.post(f"/operations/{running.pk}/cancel/").status_code == 302
    running.refresh_from_db()
    assert running.is_active
