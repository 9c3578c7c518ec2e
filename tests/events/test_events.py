"""Event subscriptions against a real local receiver that checks the signature: an
operation's end reaches it signed, a tampered body is refused, a failing receiver is
retried with backoff and logged, a redelivery is the same event (same id), and bad
subscriptions are refused with a clear 4xx."""

from __future__ import annotations

import http.client
import json
import time

import pytest
from django.db import transaction
from django.utils import timezone

from apps.alerts.models import Alert
from apps.events import sending, services
from apps.events.core import signing
from apps.events.models import Delivery, Event, Subscription
from apps.ops import engine
from apps.ops.models import Operation
from tests.benchmarks import factories
from tests.driving import drive
from tests.events.receiver import event_receiver
from tests.ops import kinds  # noqa: F401  registers test kinds

pytestmark = pytest.mark.django_db


def subscribe(api, url: str, events: list[str], name: str = "ci") -> dict:
    made = api.post("/api/event-subscriptions/", {"name": name, "url": url, "events": events},
                    format="json")
    assert made.status_code == 201, made.content
    return made.json()


def story_operation() -> Operation:
    host = factories.host("db1")
    with transaction.atomic():
        operation = engine.start(kinds.STORY.name, host=host, subject="db1")
    return drive(operation)


def test_an_operation_that_ends_reaches_the_receiver_signed(api, event_settings, enqueued):
    with event_receiver() as receiver:
        made = subscribe(api, receiver.url, ["operation.finished"])
        receiver.secret = made["secret"]
        assert made["secret"].startswith("whsec_")
        assert "secret" not in api.get(f"/api/event-subscriptions/{made['id']}/").json()
        operation = story_operation()
        assert operation.status == "succeeded"
        rows = [sending.attempt(pk) for pk in enqueued]
    assert [row.status for row in rows] == ["sent"]
    (event,) = receiver.events.values()
    assert event["kind"] == "operation.finished"
    assert event["subject"] == {"type": "operation", "id": operation.pk, "name": "db1"}
    assert event["data"]["kind"] == "test.story" and event["data"]["outcome"] == "succeeded"
    assert event["id"] == str(Event.objects.get().id)
    assert receiver.refused == 0


def test_a_tampered_body_or_a_wrong_secret_is_refused_by_the_receiver(event_settings):
    with event_receiver() as receiver:
        receiver.secret = signing.new_secret()
        body = signing.body_of({"id": "e1", "kind": "clone.ready", "data": {"port": 6610}})
        now = int(time.time())
        headers = signing.headers(receiver.secret, now, body, "clone.ready", "e1")

        def post(data: bytes, sent_headers: dict) -> int:
            connection = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=5)
            connection.request("POST", "/events", body=data, headers=sent_headers)
            status = connection.getresponse().status
            connection.close()
            return status

        assert post(body, headers) == 200
        assert post(body.replace(b"6610", b"6611"), headers) == 401
        forged = signing.headers("whsec_other", now, body, "clone.ready", "e1")
        assert post(body, forged) == 401
        stale = signing.headers(receiver.secret, now - 3600, body, "clone.ready", "e1")
        assert post(body, stale) == 401
    assert receiver.refused == 3 and list(receiver.events) == ["e1"]


def test_a_failing_receiver_is_retried_with_backoff_and_the_log_is_readable(
        api, event_settings, enqueued):
    with event_receiver(statuses=[500, 503]) as receiver:
        receiver.secret = subscribe(api, receiver.url, ["operation.finished"])["secret"]
        story_operation()
        (pk,) = enqueued
        first = sending.attempt(pk)
        assert (first.status, first.attempts) == ("pending", 1)
        assert 0.5 < (first.next_attempt_at - timezone.now()).total_seconds() <= 1
        assert sending.attempt(pk) is None  # not due yet
        Delivery.objects.filter(pk=pk).update(next_attempt_at=timezone.now())
        second = sending.attempt(pk)
        assert 1.5 < (second.next_attempt_at - timezone.now()).total_seconds() <= 2  # doubled
        Delivery.objects.filter(pk=pk).update(next_attempt_at=timezone.now())
        third = sending.attempt(pk)
    assert (third.status, third.attempts) == ("sent", 3)
    assert receiver.requests == 3 and len(receiver.events) == 1
    shown = api.get(f"/api/event-deliveries/{pk}/").json()
    assert [(e["outcome"], e["status"]) for e in shown["log"]] == [
        ("Failed: HTTP 500 Internal Server Error", 500),
        ("Failed: HTTP 503 Service Unavailable", 503), ("sent", 200)]
    assert shown["kind"] == "operation.finished" and shown["event"] == str(Event.objects.get().id)


def test_redelivery_sends_the_same_event_never_a_second_one(api, event_settings, enqueued):
    with event_receiver() as receiver:
        receiver.secret = subscribe(api, receiver.url, ["operation.finished"])["secret"]
        story_operation()
        (pk,) = enqueued
        assert sending.attempt(pk).status == "sent"
        again = api.post(f"/api/event-deliveries/{pk}/redeliver/")
        assert again.status_code == 202, again.content
        assert enqueued == [pk, pk]
        assert sending.attempt(pk).status == "sent"
        busy = api.post(f"/api/event-deliveries/{pk}/redeliver/")
    assert busy.status_code == 202  # sent again: allowed; a pending one is a 409
    assert receiver.requests == 2 and len(receiver.events) == 1
    assert Event.objects.count() == 1 and Delivery.objects.count() == 1


def test_only_the_kinds_named_are_delivered_and_alerts_are_events(
        api, event_settings, enqueued):
    with event_receiver() as receiver:
        receiver.secret = subscribe(api, receiver.url, ["alert.opened", "alert.resolved"])[
            "secret"]
        host = factories.host("db2")
        story_operation()  # not subscribed: recorded, not delivered
        Alert.raise_once(host, "host_key_changed", "db2's host key changed")
        Alert.raise_once(host, "host_key_changed", "again: still the same alert")
        Alert.resolve("host_key_changed", host=host)
        for pk in enqueued:
            sending.attempt(pk)
    assert receiver.kinds() == ["alert.opened", "alert.resolved"]
    assert Event.objects.filter(kind="operation.finished").count() == 1
    assert all(e["subject"]["type"] == "alert" for e in receiver.events.values())


def test_a_ping_reaches_only_its_subscription(api, event_settings, enqueued):
    with event_receiver() as receiver:
        made = subscribe(api, receiver.url, ["clone.ready"])
        receiver.secret = made["secret"]
        subscribe(api, receiver.url, ["clone.ready"], name="other")
        pinged = api.post(f"/api/event-subscriptions/{made['id']}/ping/")
        assert pinged.status_code == 202, pinged.content
        assert sending.attempt(enqueued[0]).status == "sent"
    assert receiver.kinds() == ["subscription.ping"]
    assert Delivery.objects.count() == 1


def test_a_rotated_secret_signs_the_next_attempt(api, event_settings, enqueued):
    with event_receiver() as receiver:
        made = subscribe(api, receiver.url, ["operation.finished"])
        rotated = api.post(f"/api/event-subscriptions/{made['id']}/rotate-secret/").json()
        assert rotated["secret"] != made["secret"]
        receiver.secret = made["secret"]  # the receiver still has the old one
        story_operation()
        row = sending.attempt(enqueued[0])
        assert row.status == "pending" and receiver.refused == 1
        receiver.secret = rotated["secret"]
        Delivery.objects.filter(pk=row.pk).update(next_attempt_at=timezone.now())
        assert sending.attempt(row.pk).status == "sent"


@pytest.mark.parametrize(("body", "field", "words"), [
    ({"url": "http://10.1.2.3/hook"}, "url", "not in the allowed webhook networks"),
    ({"url": "http://internal.example/hook"}, "url", "not an allowed webhook host"),
    ({"url": "ftp://127.0.0.1/hook"}, "url", "only http:// and https://"),
    ({"url": "http://user:pw@127.0.0.1/hook"}, "url", "credentials in the URL"),
    ({"url": "not a url"}, "url", ""),
    ({"url": "http://127.0.0.1/" + "a" * 3000}, "url", "no more than 2000"),
    ({"events": ["clone.exploded"]}, "events", "not a valid choice"),
    ({"events": []}, "events", ""),
    ({"events": "operation.finished"}, "events", ""),
    ({"events": ["subscription.ping"]}, "events", "Unknown event kind"),
    ({"events": ["operation.finished"] * 51}, "events", "no more than 50"),
    ({"name": "n" * 101}, "name", "no more than 100"),
    ({"name": 5}, "name", ""),
])
def test_bad_subscriptions_are_refused_with_a_clear_4xx(api, event_settings, body, field,
                                                        words):
    sent = {"name": "ci", "url": "http://127.0.0.1:9/hook", "events": ["clone.ready"], **body}
    answer = api.post("/api/event-subscriptions/", sent, format="json")
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert field in (error["fields"] or {}), error
    assert words in json.dumps(error)
    assert not Subscription.objects.exists()


def test_a_taken_name_is_a_409_and_kinds_are_listed(api, event_settings):
    subscribe(api, "http://127.0.0.1:9/hook", ["clone.ready"])
    again = api.post("/api/event-subscriptions/", {"name": "ci", "url": "http://127.0.0.1:9/",
                                                   "events": ["clone.ready"]}, format="json")
    assert again.status_code == 409
    names = {kind["name"] for kind in api.get("/api/event-kinds/").json()}
    assert {"operation.finished", "clone.ready", "clone.failed", "clone.destroyed",
            "link.in_sync", "link.failed", "alert.opened", "alert.resolved"} <= names
    assert "subscription.ping" not in names


def test_a_subscription_made_after_an_event_does_not_get_it(api, event_settings, enqueued):
    story_operation()
    subscribe(api, "http://127.0.0.1:9/hook", ["operation.finished"])
    assert enqueued == [] and Delivery.objects.count() == 0
    assert services.tick(timezone.now()) == 0


def test_the_event_list_walks_by_cursor_in_time_order_under_inserts(api, monkeypatch):
    from apps.api.pagination import CursorOrPages
    from apps.events.record import record

    monkeypatch.setattr(CursorOrPages, "page_size", 5)
    existing = [str(record("clone.ready", {"type": "clone", "id": n, "name": f"c{n}"}, {}).id)
                for n in range(12)]
    seen, url, pages = [], "/api/events/?cursor=", 0
    while url:
        body = api.get(url).json()
        seen += [row["id"] for row in body["results"]]
        url, pages = body["next"], pages + 1
        if pages == 1:
            for n in range(3):
                record("clone.failed", {"type": "clone", "id": 100 + n, "name": "x"}, {})
    assert seen == list(reversed(existing))  # every one once, newest first


def test_events_older_than_operations_are_kept_go_unless_still_being_delivered(
        api, event_settings, enqueued, settings):
    from datetime import timedelta

    subscribe(api, "http://127.0.0.1:9/hook", ["operation.finished"])
    host = factories.host("db1")

    def ended() -> Operation:
        with transaction.atomic():
            operation = engine.start(kinds.STORY.name, host=host, subject="db1")
        return drive(operation)

    ended()
    ended()
    old, pending = Event.objects.all()[:2]
    days = settings.POZOL["OPERATION_RETENTION_DAYS"]
    Event.objects.filter(pk__in=[old.pk, pending.pk]).update(
        created_at=timezone.now() - timedelta(days=days, minutes=1))
    Delivery.objects.filter(event=old).update(status=Delivery.Status.SENT)
    Delivery.objects.filter(event=pending).update(status=Delivery.Status.PENDING)
    recent = ended()

    assert services.prune(timezone.now()) == 1
    assert not Event.objects.filter(pk=old.pk).exists()
    assert not Delivery.objects.filter(event_id=old.pk).exists()
    assert Event.objects.filter(pk=pending.pk).exists()
    assert Event.objects.filter(subject__id=recent.pk).exists()


def test_a_delivery_whose_message_was_lost_is_sent_again_to_the_events_task(
        api, event_settings, enqueued, monkeypatch, django_capture_on_commit_callbacks):
    from datetime import timedelta

    from apps.alerts import delivery as alert_delivery

    sent = []
    monkeypatch.setattr(alert_delivery.current_app, "send_task",
                        lambda name, args, retries: sent.append((name, args, retries)))
    subscribe(api, "http://127.0.0.1:9/hook", ["operation.finished"])
    story_operation()
    (row,) = Delivery.objects.all()
    Delivery.objects.filter(pk=row.pk).update(
        attempts=2, next_attempt_at=timezone.now() - timedelta(minutes=2))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.tick(timezone.now()) == 1
    assert sent == [("events.deliver", (row.pk,), 2)]
    Delivery.objects.filter(pk=row.pk).update(status=Delivery.Status.SENT)
    assert services.tick(timezone.now()) == 0
