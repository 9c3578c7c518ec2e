"""Adding a host while the broker is down: the request succeeds, the host and
its discovery are saved, and the sweeper delivers the discovery once a broker
answers again (never a 500 with half the work saved)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis

from apps.demo.services import free_port
from apps.fleet.models import Host
from apps.ops import engine
from apps.ops.models import Operation
from apps.remote.keys import generate_keypair
from pozol.celery import app as celery_app
from tests.redis_server import RedisServer
from tests.workers import ProcessGroup, Worker

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"name": "db1", "address": "127.0.84.254", "port": 22, "user": "root",
        "private_key": generate_keypair("tests")[0], "trust_on_first_use": True}


def point_broker_at(url: str) -> None:
    # Celery caches its connection and producer pools; drop them so the next
    # publish connects to `url`.
    celery_app.conf.broker_url = url
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture
def broker() -> Iterator:
    """Lets a test move the broker; puts the configured one back afterwards."""
    configured = celery_app.conf.broker_url
    yield point_broker_at
    point_broker_at(configured)


@pytest.fixture
def private_redis(redis_server: RedisServer) -> str:
    return redis_server.url()


def queued_steps(url: str) -> list[str]:
    """The argsrepr of every ops.run_step message waiting in the default queue."""
    messages = redis.Redis.from_url(url).lrange("celery", 0, -1)
    headers = [json.loads(raw)["headers"] for raw in messages]
    return [h["argsrepr"] for h in headers if h["task"] == "ops.run_step"]


def test_adding_a_host_with_the_broker_down_succeeds_and_is_delivered_later(
        api, broker, private_redis, caplog, tmp_path):
    broker(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there

    response = api.post("/api/hosts/", BODY, format="json")

    assert response.status_code == 201, response.content
    host = Host.objects.get(name="db1")
    operation = Operation.objects.get(host=host)
    assert (operation.status, operation.kind) == ("pending", "fleet.discover")
    assert any("broker" in r.getMessage() for r in caplog.records if r.name == "pozol.ops")

    broker(private_redis)
    assert engine.sweep() == []  # a fresh operation may still be on its way
    Operation.objects.filter(pk=operation.pk).update(
        created_at=operation.created_at - timedelta(seconds=11))
    assert engine.sweep() == [operation.pk]
    assert queued_steps(private_redis) == [f"({operation.pk},)"]

    # A real worker on the returned broker runs it (nothing answers SSH at that
    # address, so discovery ends failed: what matters is that it ran).
    worker = Worker("pozol", "broker-back", tmp_path, POZOL_REDIS_URL=private_redis)
    try:
        deadline = time.monotonic() + 60
        while Operation.objects.get(pk=operation.pk).is_active:
            assert time.monotonic() < deadline, worker.output()[-3000:]
            time.sleep(0.3)
    finally:
        worker.stop()
    operation.refresh_from_db()
    assert operation.started_at is not None and operation.status == "failed", operation.error


def test_a_next_step_whose_delivery_failed_is_swept(broker, private_redis):
    """Between two steps an operation is running without a lease; if that
    delivery was lost, the sweeper must still find it."""
    from tests.ops import kinds  # noqa: F401  registers test kinds

    broker(f"redis://127.0.0.1:{free_port()}/0")
    operation = engine.start("test.story")
    assert engine.run_step(operation.pk).startswith("next")
    operation.refresh_from_db()
    assert (operation.status, operation.lease_expires_at) == ("running", None)

    broker(private_redis)
    Operation.objects.filter(pk=operation.pk).update(
        updated_at=operation.updated_at - timedelta(seconds=11))
    assert engine.sweep() == [operation.pk]
    assert queued_steps(private_redis) == [f"({operation.pk},)"]


def test_a_worker_survives_a_redis_outage_and_runs_what_was_asked_meanwhile(
        api, broker, redis_server: RedisServer, tmp_path):
    """Redis stops under a running worker and the API; a host added meanwhile is
    saved, and once Redis is back the same worker runs its discovery."""
    broker(redis_server.url())
    worker = Worker("pozol", "outage", tmp_path, POZOL_REDIS_URL=redis_server.url())
    try:
        wait_for(lambda: " ready." in worker.output(), worker)
        redis_server.stop()
        wait_for(lambda: "Connection to broker lost" in worker.output(), worker)

        response = api.post("/api/hosts/", {**BODY, "name": "db2"}, format="json")
        assert response.status_code == 201, response.content
        operation = Operation.objects.get(host__name="db2")
        time.sleep(3)  # the worker keeps retrying, in vain, meanwhile
        assert worker.process.poll() is None, worker.output()[-3000:]

        redis_server.start()
        Operation.objects.filter(pk=operation.pk).update(
            created_at=operation.created_at - timedelta(seconds=11))
        assert engine.sweep() == [operation.pk]
        wait_for(lambda: not Operation.objects.get(pk=operation.pk).is_active, worker,
                 timeout=90)
        assert worker.process.poll() is None
        assert "Error on restarting" not in worker.output(), worker.output()[-3000:]
    finally:
        worker.stop()
    operation.refresh_from_db()
    assert operation.started_at is not None and operation.status == "failed", operation.error


def test_beat_delivers_what_was_asked_during_an_outage_and_both_outlive_it(
        api, broker, redis_server: RedisServer, settings, tmp_path):
    """Issue 19 §5, end to end with nobody calling the sweeper: a real worker and a real
    beat (the sweeper every second, nothing else scheduled) on a Redis the test stops.
    A host added meanwhile is saved; once Redis is back, beat's sweeper re-delivers
    its discovery and the same worker runs it; neither process exited."""
    from django_celery_beat.models import PeriodicTask

    from apps.ops.schedule import ensure_periodic_tasks
    from tests.workers import Beat

    broker(redis_server.url())
    settings.POZOL = {**settings.POZOL, "SWEEP_INTERVAL": 1}
    ensure_periodic_tasks()
    PeriodicTask.objects.exclude(task="ops.sweep").update(enabled=False)
    env = {"POZOL_REDIS_URL": redis_server.url(), "POZOL_SWEEP_INTERVAL": "1"}
    worker = Worker("pozol", "outage-beat", tmp_path, **env)
    beat = Beat("pozol", "outage", tmp_path, **env)
    try:
        wait_for(lambda: " ready." in worker.output(), worker)
        wait_for(lambda: "(ops.sweep)" in beat.output(), beat)
        redis_server.stop()
        wait_for(lambda: "Connection to broker lost" in worker.output(), worker)

        response = api.post("/api/hosts/", {**BODY, "name": "db3"}, format="json")
        assert response.status_code == 201, response.content
        operation = Operation.objects.get(host__name="db3")
        time.sleep(4)  # beat's sweeps fail meanwhile: nowhere to send them
        for process in (worker, beat):
            assert process.process.poll() is None, process.output()[-3000:]
        assert Operation.objects.get(pk=operation.pk).started_at is None

        redis_server.start()
        # Not before SWEEP_GRACE (10 s) has passed since it was asked for.
        wait_for(lambda: not Operation.objects.get(pk=operation.pk).is_active, worker,
                 timeout=90)
        for process in (worker, beat):
            assert process.process.poll() is None, process.output()[-3000:]
    finally:
        beat.stop()
        worker.stop()
    operation.refresh_from_db()
    assert operation.started_at is not None and operation.status == "failed", operation.error


def wait_for(condition, worker: ProcessGroup, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert worker.process.poll() is None, worker.output()[-3000:]
        assert time.monotonic() < deadline, worker.output()[-3000:]
        time.sleep(0.2)
