"""The Redis transport Celery uses, less one way a broker outage kills a worker.

Celery 5.7.0, on losing the broker, first collects the connection (which drops
the transport's client) and then closes it. When Redis went away while the
worker was waiting on BRPOP, the channel's first close stops at reading that
reply, so the second close runs the channel's close again, and with a message
delivered but not yet acknowledged it asks the dropped client for a Redis
address: AttributeError, which nothing expects, and the worker exits instead of
reconnecting. Here that case is the connection error it really is, so the
close ignores it and the worker reconnects. The message stays in Redis's set
of unacknowledged ones, as with any connection lost mid-delivery: the transport
delivers it again after its visibility timeout, and the sweeper re-sends any
operation whose step never started (apps.ops.engine).
"""

from __future__ import annotations

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict:
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection was already collected")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel
