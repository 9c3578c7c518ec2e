"""Events from a real test host: a subscription hears, signed, that a clone made through
the API is ready and then destroyed, and that each operation finished; the receiver
verifies every signature, and a repeated Idempotency-Key made one clone."""

from __future__ import annotations

import pytest

from apps.clones.models import Clone
from apps.events import sending
from apps.ops.models import Operation
from tests.driving import drive
from tests.events.receiver import event_receiver
from tests.integration.test_clones import host  # noqa: F401  the fixture
from tests.integration.test_replication import pair  # noqa: F401  the fixture

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def test_a_clone_and_its_operations_reach_a_receiver_signed(api, host, enqueued):  # noqa: F811
    _, row = host
    with event_receiver() as receiver:
        made = api.post("/api/event-subscriptions/", {
            "name": "ci", "url": receiver.url,
            "events": ["clone.ready", "clone.failed", "clone.destroyed",
                       "operation.finished"]}, format="json")
        assert made.status_code == 201, made.content
        receiver.secret = made.json()["secret"]
        assert api.put(f"/api/hosts/{row.pk}/clone-settings/", {
            "port_min": 6630, "port_max": 6640, "listen_address": None,
            "allowed_networks": ["127.0.0.0/8"]}, format="json").status_code == 200
        body = {"host": row.pk, "cluster": row.clusters.get().pk, "name": "ev1"}
        first = api.post("/api/clones/", body, format="json", HTTP_IDEMPOTENCY_KEY="ev1-make")
        again = api.post("/api/clones/", body, format="json", HTTP_IDEMPOTENCY_KEY="ev1-make")
        assert first.status_code == again.status_code == 202, (first.content, again.content)
        assert again.json()["operation"] == first.json()["operation"]
        assert again.json()["password"] == ""  # a one-time secret is not kept
        assert Clone.objects.count() == 1
        operation = drive(Operation.objects.get(pk=first.json()["operation"]["id"]))
        assert operation.status == Operation.Status.SUCCEEDED, operation.error
        clone_id = first.json()["clone"]["id"]
        destroyed = api.delete(f"/api/clones/{clone_id}/")
        assert destroyed.status_code == 202, destroyed.content
        assert drive(Operation.objects.get(pk=destroyed.json()["id"])).status == "succeeded"
        rows = [sending.attempt(pk) for pk in enqueued]
    assert {r.status for r in rows} == {"sent"}, [r.last_error for r in rows]
    assert receiver.refused == 0
    assert receiver.kinds() == ["clone.destroyed", "clone.ready", "operation.finished",
                                "operation.finished"]
    by_kind = {e["kind"]: e for e in receiver.events.values()}
    assert by_kind["clone.ready"]["subject"] == {"type": "clone", "id": clone_id,
                                                 "name": "ev1"}
    assert by_kind["clone.ready"]["data"]["port"] == 6630
    finished = sorted((e["data"]["kind"], e["data"]["outcome"])
                      for e in receiver.events.values() if e["kind"] == "operation.finished")
    assert finished == [("clones.create", "succeeded"), ("clones.destroy", "succeeded")]


def test_a_replication_run_reaches_the_receiver_as_link_in_sync(pair, api, enqueued):  # noqa: F811
    from apps.replication import records
    from apps.replication.models import ReplicationLink
    from tests.integration.test_replication import insert, make_link, run_link, snapshot

    source, _, hosts = pair
    with event_receiver() as receiver:
        made = api.post("/api/event-subscriptions/", {
            "name": "links", "url": receiver.url, "events": ["link.in_sync", "link.failed"]},
            format="json")
        receiver.secret = made.json()["secret"]
        link = make_link(hosts)
        insert(source, 100)
        snapshot(hosts[0], hosts[0].clusters.get())
        operation = run_link(link)
        assert operation.status == Operation.Status.SUCCEEDED, operation.error
        # the one place a failed run is recorded, as a failing step calls it
        records.record_outcome(link, ReplicationLink.State.FAILED, "send: broken pipe")
        rows = [sending.attempt(pk) for pk in enqueued]
    assert {r.status for r in rows} == {"sent"} and receiver.refused == 0
    assert receiver.kinds() == ["link.failed", "link.in_sync"]
    for event in receiver.events.values():
        assert event["subject"] == {"type": "replication_link", "id": link.pk,
                                    "name": "to-host2"}
    failed = next(e for e in receiver.events.values() if e["kind"] == "link.failed")
    assert failed["data"]["error"] == "send: broken pipe"
