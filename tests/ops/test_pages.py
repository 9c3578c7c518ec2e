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
    assert "finished not yet" not in page.find("p", id="op-times").text  # times swap too


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


# ---- The operations list: filters, pages that keep them, and polling while active ----

def _operation(host=None, *, kind="fleet.discover", status=Operation.Status.SUCCEEDED,
               trigger=Operation.Trigger.SYSTEM, user=None) -> Operation:
    return Operation.objects.create(kind=kind, host=host, subject=host.name if host else "-",
                                    step="done", status=status, trigger=trigger,
                                    triggered_by=user)


def _listed(response) -> list[int]:
    table = parse(response.content).find("table", id="operations")
    return [int(link.text) for link in table.find_all("a")]


@pytest.fixture
def mixed(replayed_host, operator):
    from apps.fleet.models import Host

    other = Host.objects.create(name="db2", address="127.0.0.10")
    return {
        "db2": _operation(other),
        "applied": _operation(replayed_host, kind="tuning.apply", trigger="ui", user=operator),
        "failed": _operation(replayed_host, status=Operation.Status.FAILED, trigger="api"),
        "scheduled": _operation(replayed_host, trigger="schedule"),
    }


def test_every_filter_has_a_label_and_an_any_choice(signed_in, mixed):
    form = parse(signed_in.get("/operations/").content).find("form", id="operation-filters")
    assert form.attrs["method"] == "get"
    labels = {label.attrs["for"]: label.text for label in form.find_all("label")}
    fields = form.find_all("select")
    assert [field.attrs["name"] for field in fields] == ["status", "kind", "trigger", "user"]
    for field in fields:
        assert labels[field.attrs["id"]], field.attrs
        first = field.find_all("option")[0]
        assert first.attrs["value"] == "" and first.text.startswith("any")  # or "anywhere"
    assert "olga" in form.find("select", name="user").text


def test_the_host_is_typed_by_name_not_chosen_from_every_host(signed_in, mixed):
    """A list of every host would make the page grow with the fleet (246 KB at 5,000)."""
    form = parse(signed_in.get("/operations/").content).find("form", id="operation-filters")
    host = form.find("input", name="host_name")
    assert host.attrs["type"] == "text" and host.attrs["placeholder"] == "any host"
    assert form.find("label", **{"for": host.attrs["id"]}).text == "Host"
    assert "db2" not in form.text


def test_a_link_by_host_id_shows_and_keeps_the_host_by_name(signed_in, mixed, replayed_host):
    response = signed_in.get(f"/operations/?host={replayed_host.pk}&kind=tuning.apply")
    form = parse(response.content).find("form", id="operation-filters")
    assert form.find("input", name="host_name").attrs["value"] == "db1"
    assert not [i for i in form.find_all("input", name="host") if i.attrs.get("value")]
    assert _listed(response) == [mixed["applied"].pk]


@pytest.mark.parametrize(("query", "expected"), [
    ("", ["scheduled", "failed", "applied", "db2"]),
    ("host={db1}", ["scheduled", "failed", "applied"]),
    ("kind=tuning.apply", ["applied"]),
    ("status=failed", ["failed"]),
    ("trigger=schedule", ["scheduled"]),
    ("user=olga", ["applied"]),
    ("host={db1}&trigger=api&status=failed", ["failed"]),
    ("host_name=db2", ["db2"]),
    ("host_name=nosuch", []),
    ("host=&host_name=&kind=&status=&trigger=&user=", ["scheduled", "failed", "applied", "db2"]),
])
def test_the_list_filters_by_host_kind_status_and_who(signed_in, mixed, replayed_host,
                                                      query, expected):
    response = signed_in.get("/operations/?" + query.format(db1=replayed_host.pk))
    assert response.status_code == 200
    assert _listed(response) == [mixed[name].pk for name in expected]


def test_the_chosen_filters_stay_chosen(signed_in, mixed):
    form = parse(signed_in.get("/operations/?status=failed&trigger=api").content).find(
        "form", id="operation-filters")
    chosen = {select.attrs["name"]: [o.attrs["value"] for o in select.find_all("option")
                                     if "selected" in o.attrs]
              for select in form.find_all("select")}
    assert chosen["status"] == ["failed"] and chosen["trigger"] == ["api"]


@pytest.mark.parametrize(("query", "field"), [
    ("host=abc", "host"), ("host=0", "host"), (f"host={2**63}", "host"),
    ("host_name=" + "x" * 256, "host_name"),
    ("status=bogus", "status"), ("trigger=cron", "trigger"), ("kind=a%00b", "kind"),
])
def test_a_bad_filter_says_which_and_why(signed_in, mixed, query, field):
    response = signed_in.get("/operations/?" + query)
    assert response.status_code == 400
    page = parse(response.content)
    assert page.find("ul", id=f"id_{field}_error", class_="errorlist").text
    assert f"{field}:" in page.find("p", id="filter-errors").text
    assert not page.find_all("table", id="operations")


def test_pages_keep_the_filters(signed_in, replayed_host):
    for _ in range(51):
        _operation(replayed_host, kind="tuning.apply")
    _operation(replayed_host)  # another kind: never listed below
    first = parse(signed_in.get("/operations/?kind=tuning.apply").content)
    older = first.find("a", rel="next").attrs["href"]
    assert older == "?kind=tuning.apply&page=2"
    second = signed_in.get("/operations/" + older)
    assert len(_listed(second)) == 1
    newer = parse(second.content).find("a", rel="prev").attrs["href"]
    assert newer == "?kind=tuning.apply&page=1"


def test_the_api_filters_by_who_too(api, mixed):
    ids = [row["id"] for row in api.get("/api/operations/", {"trigger": "schedule"}).json()
           ["results"]]
    assert ids == [mixed["scheduled"].pk]
    ids = [row["id"] for row in api.get("/api/operations/", {"user": "olga"}).json()["results"]]
    assert ids == [mixed["applied"].pk]
    assert api.get("/api/operations/", {"trigger": "cron"}).status_code == 400


def _live(page) -> dict:
    return parse(page.content).find("div", id="operations-live").attrs


def test_the_list_polls_only_while_an_operation_on_it_is_active(signed_in, mixed,
                                                                 replayed_host):
    assert "hx-trigger" not in _live(signed_in.get("/operations/"))

    running = _operation(replayed_host, kind="tuning.apply", status=Operation.Status.RUNNING)
    live = _live(signed_in.get("/operations/?kind=tuning.apply"))
    assert live["hx-get"] == "/operations/?kind=tuning.apply"
    assert live["hx-trigger"].startswith("every") and live["hx-swap"] == "outerHTML"
    assert "hx-trigger" not in _live(signed_in.get("/operations/?status=failed"))

    poll = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "operations-live"}
    response = signed_in.get("/operations/?kind=tuning.apply", **poll)
    assert response.status_code == 200 and b"<html" not in response.content
    assert "hx-trigger" in _live(response)

    Operation.objects.filter(pk=running.pk).update(status=Operation.Status.SUCCEEDED)
    response = signed_in.get("/operations/?kind=tuning.apply", **poll)
    assert response.status_code == 286  # htmx: stop polling
    assert "hx-trigger" not in _live(response)
    assert _listed(response) == [running.pk, mixed["applied"].pk]
