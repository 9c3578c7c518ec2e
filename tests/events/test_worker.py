"""events.deliver under a real Celery worker, as deployed: an event recorded in a
transaction is sent after it commits; a failing receiver is retried at the backoff
(1 s, then 2 s), every attempt logged, and the receiver gets one event, signed."""

from __future__ import annotations

from datetime import datetime
from itertools import pairwise

import pytest
from django.db import transaction

from apps.events import services
from apps.events.models import Delivery
from apps.events.record import record
from tests.events.receiver import event_receiver
from tests.waiting import wait_until
from tests.workers import Worker


@pytest.mark.django_db(transaction=True)
def test_the_worker_sends_after_commit_and_retries_at_the_backoff(tmp_path, event_settings):
    worker = Worker("pozol", "events", tmp_path, POZOL_ALERT_RETRY_SECONDS="1",
                    POZOL_ALERT_DELIVERY_ATTEMPTS="3", POZOL_ALERT_WEBHOOK_ALLOW="127.0.0.1/32")
    try:
        with event_receiver(statuses=[500, 503]) as receiver:
            made = services.create_subscription(name="ci", url=receiver.url,
                                                events=["clone.ready"])
            receiver.secret = made.secret
            with transaction.atomic():
                event = record("clone.ready", {"type": "clone", "id": 7, "name": "c7"},
                               {"port": 6610})
                assert Delivery.objects.get().status == "pending"
            row = Delivery.objects.get()
            assert wait_until(lambda: Delivery.objects.get().status != "pending", 60, 0.5), \
                worker.output()[-3000:]
        row.refresh_from_db()
    finally:
        worker.stop()
    assert (row.status, row.attempts) == ("sent", 3), row.log
    assert [entry["status"] for entry in row.log] == [500, 503, 200]
    times = [datetime.fromisoformat(entry["at"]) for entry in row.log]
    first, second = [(b - a).total_seconds() for a, b in pairwise(times)]
    assert 1 <= first < 4 and 2 <= second < 5, row.log
    assert list(receiver.events) == [str(event.id)] and receiver.refused == 0
