"""The operation page: following an operation and cancelling it (issue 8, section 2)."""

from __future__ import annotations

import pytest

from apps.ops import engine
from apps.ops.models import LogLine, Operation
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


# ---- Following the log: the poll appends the lines after the last one shown --------

def _log(operation: Operation, *texts: str) -> list[int]:
    return [LogLine.objects.create(operation=operation, text=text).pk for text in texts]


def _poll(client, url: str):
    return client.get(url, HTTP_HX_REQUEST="true")


def test_the_page_shows_the_log_and_polls_for_the_lines_after_its_last(signed_in, running):
    ids = _log(running, "first", "second")

    page = parse(signed_in.get(f"/operations/{running.pk}/").content)

    log = page.find("pre", id="op-log")
    assert [span.text.split(" ", 1)[1] for span in log.find_all("span")] == ["first", "second"]
    progress = page.find("div", id="progress")
    assert progress.attrs["hx-get"] == f"/operations/{running.pk}/?after={ids[-1]}"
    assert progress.attrs["hx-trigger"] == "every 1s"
    assert progress.attrs["hx-swap"] == "outerHTML"
    assert not progress.find_all("pre"), "the log is outside what each poll replaces"
    follow = page.find("input", id="follow-log")
    assert follow.attrs["data-follow-log"] == "op-log" and "checked" in follow.attrs
    assert page.find("label").find_all("input", id="follow-log")


def test_a_poll_appends_only_the_new_lines_and_moves_its_cursor(signed_in, running):
    seen = _log(running, "old one", "old two")
    new = _log(running, "new one", "new two")

    response = _poll(signed_in, f"/operations/{running.pk}/?after={seen[-1]}")

    assert response.status_code == 200
    page = parse(response.content)
    appended = page.find("pre", id="op-log")
    assert appended.attrs["hx-swap-oob"] == "beforeend"
    assert [s.attrs["id"] for s in appended.find_all("span")] == [f"log-{i}" for i in new]
    assert "old one" not in appended.text
    progress = page.find("div", id="progress")
    assert progress.attrs["hx-get"] == f"/operations/{running.pk}/?after={new[-1]}"
    assert page.find("span", id="op-status").text == running.status


def test_a_poll_with_nothing_new_keeps_its_cursor_and_appends_nothing(signed_in, running):
    seen = _log(running, "only")

    page = parse(_poll(signed_in, f"/operations/{running.pk}/?after={seen[-1]}").content)

    assert not page.find_all("pre")
    assert page.find("div", id="progress").attrs["hx-get"].endswith(f"?after={seen[-1]}")


def test_polling_stops_when_the_operation_ends_and_its_last_lines_still_arrive(
        signed_in, running):
    seen = _log(running, "working")
    engine.cancel(running, "stopped here")

    response = _poll(signed_in, f"/operations/{running.pk}/?after={seen[-1]}")

    assert response.status_code == 286  # htmx: stop polling
    page = parse(response.content)
    assert "hx-trigger" not in page.find("div", id="progress").attrs
    assert page.find("pre", id="op-log").text.endswith("stopped here")
    assert page.find("span", id="op-status").text == "cancelled"


def test_an_ended_operation_page_does_not_poll_nor_follow(signed_in, running):
    engine.cancel(running)
    page = parse(signed_in.get(f"/operations/{running.pk}/").content)
    assert "hx-get" not in page.find("div", id="progress").attrs
    assert "checked" not in page.find("input", id="follow-log").attrs


@pytest.mark.parametrize("after", ["abc", "-1", "1.5", "١٢", str(2**63), ""])
def test_a_bad_cursor_is_refused_with_a_reason(signed_in, running, after):
    response = _poll(signed_in, f"/operations/{running.pk}/?after={after}")
    assert response.status_code == 400
    assert b"after" in response.content
