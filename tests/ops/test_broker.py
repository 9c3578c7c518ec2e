"""A worker's broker connection lost mid-delivery, closed the way Celery 5.7.0 closes
it (collect, then close), on a real Redis that stops: kombu's own Redis transport
raises what no caller expects, and the worker would exit; PoZoL's (apps.ops.broker)
raises a connection error, which the close ignores."""

from __future__ import annotations

import pytest
from kombu import Connection, Exchange, Queue
from kombu.common import ignore_errors
from kombu.transport import redis as kombu_redis

from apps.ops import broker
from tests.redis_server import RedisServer


def lose_the_broker_mid_delivery(transport: type, server: RedisServer) -> None:
    """A task channel with a message delivered and not yet acknowledged, waiting on
    BRPOP, beside a control channel with a fanout queue (a worker's remote control);
    Redis stops; the connection is collected and then closed."""
    connection = Connection(server.url(), transport=transport)
    tasks = connection.default_channel
    queue = Queue("outage", Exchange("outage"), "outage", channel=tasks)
    queue.declare()
    connection.Producer(tasks).publish("delivered", exchange=queue.exchange,
                                       routing_key="outage")
    assert tasks.basic_get("outage", no_ack=False) is not None
    tasks.basic_consume("outage", False, lambda message: None, "tasks")
    connection.transport.cycle._register_BRPOP(tasks)  # as the event loop does
    control = connection.channel()
    Queue("control", Exchange("control", type="fanout"), auto_delete=True,
          channel=control).declare()
    control.basic_consume("control", True, lambda message: None, "control")
    assert control.client is not None  # used, as a worker's has been
    server.stop()
    connection.collect(socket_timeout=1)
    ignore_errors(connection, connection.close)


def test_kombus_own_transport_fails_the_close_with_an_unexpected_error(redis_server):
    """The defect the workaround exists for: once kombu or Celery fixes it, this
    fails, and apps.ops.broker can go."""
    with pytest.raises(AttributeError, match="hostname"):
        lose_the_broker_mid_delivery(kombu_redis.Transport, redis_server)


def test_pozols_transport_lets_the_close_finish(redis_server):
    lose_the_broker_mid_delivery(broker.Transport, redis_server)


def test_celery_is_configured_with_pozols_transport():
    from pozol.celery import app

    with app.connection_for_write() as connection:
        assert isinstance(connection.transport, broker.Transport)
