"""Deliveries against real local receivers: an SMTP sink (aiosmtpd) and an HTTP
server, a failing one retried with backoff and logged (by a real Celery worker
too), and SSRF refusals."""

from datetime import datetime
from itertools import pairwise

import pytest
from django.utils import timezone

from apps.alerts import delivery, dispatch, services
from apps.alerts.models import Alert, Channel, Delivery
from tests.alerts.receivers import http_receiver, smtp_sink
from tests.benchmarks import factories
from tests.waiting import wait_until
from tests.workers import Worker

pytestmark = pytest.mark.django_db


def fire(name: str = "db1") -> Alert:
    alert = Alert.raise_once(factories.host(name), "host_key_changed",
                             "db1's host key changed: SHA256:abc")
    dispatch.announce(timezone.now())
    return alert


def attempt_all(ids: list[int]) -> list[Delivery]:
    return [delivery.attempt(pk) for pk in ids]


def make_due(row: Delivery) -> None:
    """Skip the backoff's wait (the delay itself is checked on next_attempt_at)."""
    Delivery.objects.filter(pk=row.pk).update(next_attempt_at=timezone.now())


def test_mail_and_both_webhook_bodies_reach_real_receivers(alert_settings, enqueued):
    with smtp_sink() as sink, http_receiver() as plain, http_receiver() as slack:
        alert_settings.EMAIL_PORT = sink.port
        Channel.objects.create(name="mail", kind="email", target="a@example.com, b@example.com")
        Channel.objects.create(name="hook", kind="webhook", target=plain.url)
        Channel.objects.create(name="chat", kind="slack", target=slack.url)
        alert = fire()
        rows = attempt_all(enqueued)
    assert {row.status for row in rows} == {"sent"}
    assert sink.subjects() == ["[PoZoL] FIRING: Host key changed on db1"]
    assert sink.messages[0]["X-Rcpt-To"] == "a@example.com, b@example.com"
    assert "db1's host key changed: SHA256:abc" in sink.messages[0].get_payload()
    assert plain.bodies == [{**plain.bodies[0], "status": "firing", "alert_id": alert.pk,
                             "kind": "host_key_changed", "host": "db1"}]
    assert slack.bodies[0]["text"].startswith(":rotating_light: [FIRING] Host key changed on db1")


def test_a_failing_receiver_is_retried_with_backoff_and_every_attempt_is_logged(
        alert_settings, enqueued):
    with http_receiver(statuses=[500, 503]) as receiver:
        Channel.objects.create(name="hook", kind="webhook", target=receiver.url)
        fire()
        (pk,) = enqueued
        first = delivery.attempt(pk)
        assert (first.status, first.attempts, first.last_error) == (
            "pending", 1, "Failed: HTTP 500 Internal Server Error")
        assert 0.5 < (first.next_attempt_at - timezone.now()).total_seconds() <= 1
        assert delivery.attempt(pk) is None  # not due yet
        make_due(first)
        second = delivery.attempt(pk)
        assert second.attempts == 2 and second.status == "pending"
        assert 1.5 < (second.next_attempt_at - timezone.now()).total_seconds() <= 2  # doubled
        make_due(second)
        third = delivery.attempt(pk)
    assert (third.status, third.attempts, third.last_error) == ("sent", 3, "")
    assert [entry["outcome"] for entry in third.log] == [
        "Failed: HTTP 500 Internal Server Error", "Failed: HTTP 503 Service Unavailable", "sent"]
    assert len(receiver.bodies) == 1


def test_a_receiver_that_never_answers_fails_after_the_last_attempt(alert_settings, enqueued):
    with http_receiver() as gone:
        url = gone.url
    Channel.objects.create(name="hook", kind="webhook", target=url)  # nobody listens now
    fire()
    (pk,) = enqueued
    for _ in range(3):
        row = delivery.attempt(pk)
        make_due(row)
    row.refresh_from_db()
    assert row.status == "failed" and row.attempts == 3
    assert "Connection refused" in row.last_error


def test_the_allowlist_is_checked_again_at_send_time(alert_settings, enqueued):
    """A channel saved while its host was allowed, then the operator narrowed the list;
    and a listed name resolving to loopback: both refused for good, nothing sent."""
    with http_receiver() as receiver:
        Channel.objects.create(name="hook", kind="webhook", target=receiver.url)
        Channel.objects.create(name="byname", kind="webhook",
                               target=f"http://localhost:{receiver.port}/hook")
        alert_settings.POZOL = {**alert_settings.POZOL, "ALERT_WEBHOOK_ALLOW": ["localhost"]}
        fire()
        rows = {row.channel.name: row for row in attempt_all(enqueued)}
    assert receiver.bodies == []
    assert rows["hook"].status == rows["byname"].status == "failed"
    assert rows["hook"].attempts == 1
    assert rows["hook"].last_error.startswith("refused: 127.0.0.1 is not in the allowed")
    assert rows["byname"].last_error.startswith("refused: localhost resolves to 127.0.0.1")


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data/", "http://127.0.0.1.nip.io/", "gopher://x/",
    "http://10.0.0.1/"])
def test_saving_a_channel_to_an_address_not_allowed_is_refused(alert_settings, url):
    with pytest.raises(services.AlertError) as refused:
        services.save_channel(Channel(name="bad", kind="webhook", target=url))
    assert refused.value.fields.keys() == {"target"}
    assert not Channel.objects.exists()


def test_a_test_message_goes_through_the_same_path(alert_settings, enqueued):
    with smtp_sink() as sink:
        alert_settings.EMAIL_PORT = sink.port
        channel = services.save_channel(Channel(name="mail", kind="email", target="a@example.com"))
        row = services.test_channel(channel)
        delivery.attempt(row.pk)
    assert sink.subjects() == ["[PoZoL] TEST: Test message on -"]


def gaps(row: Delivery) -> list[float]:
    """Seconds between one logged attempt and the next."""
    times = [datetime.fromisoformat(entry["at"]) for entry in row.log]
    return [(later - earlier).total_seconds() for earlier, later in pairwise(times)]


@pytest.mark.django_db(transaction=True)
def test_the_worker_retries_a_failing_receiver_at_the_backoff_until_the_last_attempt(
        tmp_path):
    """Celery's autoretry on alerts.deliver, as deployed: 1 s, then 2 s between attempts,
    each logged; a receiver that keeps failing is given up after the third."""
    worker = Worker("pozol", "deliveries", tmp_path, POZOL_ALERT_RETRY_SECONDS="1",
                    POZOL_ALERT_DELIVERY_ATTEMPTS="3", POZOL_ALERT_WEBHOOK_ALLOW="127.0.0.1/32")
    try:
        with http_receiver(statuses=[500, 503]) as flaky, \
                http_receiver(statuses=[502, 502, 502, 502]) as broken:
            Channel.objects.create(name="flaky", kind="webhook", target=flaky.url)
            Channel.objects.create(name="broken", kind="webhook", target=broken.url)
            fire()
            rows = Delivery.objects.select_related("channel")
            assert wait_until(lambda: all(row.status != "pending" for row in rows.all()), 60,
                              0.5), worker.output()[-3000:]
            # The third attempt is not retried (the worker may also run messages
            # earlier tests left on the queue: only this test's attempts are counted).
            assert not wait_until(lambda: "Failed('attempt 3" in worker.output(), 2, 0.25)
        done = {row.channel.name: row for row in rows.all()}
        retries = [line for line in worker.output().splitlines()
                   if "] retry: Retry in" in line and "Failed('attempt " in line]
    finally:
        worker.stop()
    assert [e["outcome"] for e in done["flaky"].log] == [
        "Failed: HTTP 500 Internal Server Error", "Failed: HTTP 503 Service Unavailable", "sent"]
    assert (done["broken"].status, done["broken"].attempts) == ("failed", 3)
    assert len(flaky.bodies) == 1 and broken.statuses == [502]  # three POSTs, not four
    assert len(retries) == 4
    for row in done.values():
        first, second = gaps(row)
        assert 1 <= first < 4 and 2 <= second < 5, row.log
