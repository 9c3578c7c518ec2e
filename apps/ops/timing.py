"""How long steps take, counted in Redis so every worker process adds to one histogram.

Steps run in many worker processes (and machines); /metrics is served by a web
process that runs none. The workers add each step's duration to a histogram in
a Redis hash (one HINCRBY for its bucket, one for the count, one for the sum,
in one round trip); /metrics reads the hash back with one HGETALL. Labels are
the operation's kind and step: both are names in the code (apps.ops.engine
KINDS), so the number of series is bounded by the product, not by the fleet.

Timing is best effort: Redis being away must never fail a step, so errors
are logged and dropped.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import redis
from django.conf import settings

log = logging.getLogger("pozol.ops")

KEY = "pozol:metrics:step_seconds"
# Upper bounds, seconds: a step is a short function (a command or a few) by design.
BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_SEP = "|"  # kind and step names are dotted/underscored identifiers, never "|"
_clients: dict[str, redis.Redis] = {}
# After a failure, steps stop trying for a while: a Redis that is away must not add
# a connect timeout to every step.
_RETRY_AFTER = 60.0
_failed_at: float | None = None


def client() -> redis.Redis:
    """One client (and connection pool) per process for the broker's Redis."""
    url = settings.CELERY_BROKER_URL
    if url not in _clients:
        _clients[url] = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    return _clients[url]


def bucket_of(seconds: float) -> str:
    for bound in BUCKETS:
        if seconds <= bound:
            return repr(bound)
    return "+Inf"


def record(kind: str, step: str, seconds: float) -> None:
    global _failed_at
    if _failed_at is not None and time.monotonic() - _failed_at < _RETRY_AFTER:
        return
    prefix = f"{kind}{_SEP}{step}{_SEP}"
    try:
        pipe = client().pipeline(transaction=False)
        pipe.hincrby(KEY, prefix + bucket_of(seconds), 1)
        pipe.hincrby(KEY, prefix + "count", 1)
        pipe.hincrbyfloat(KEY, prefix + "sum", seconds)
        pipe.execute()
        _failed_at = None
    except redis.RedisError as error:
        _failed_at = time.monotonic()
        log.warning("step timing not recorded (%s %s): %s", kind, step, error)


@dataclass(frozen=True)
class StepHistogram:
    kind: str
    step: str
    buckets: list[tuple[str, int]]  # cumulative, by upper bound, "+Inf" last
    count: int
    sum: float


def histograms(raw: dict[bytes, bytes]) -> list[StepHistogram]:
    """The hash as HGETALL returns it -> one cumulative histogram per (kind, step)."""
    fields: dict[tuple[str, str], dict[str, float]] = {}
    for name, value in raw.items():
        parts = name.decode().split(_SEP)
        if len(parts) != 3:
            continue  # not written by record(): ignored rather than trusted
        kind, step, field = parts
        fields.setdefault((kind, step), {})[field] = float(value)
    found = []
    for (kind, step), counts in sorted(fields.items()):
        total, cumulative = 0, []
        for bound in (*map(repr, BUCKETS), "+Inf"):
            total += int(counts.get(bound, 0))
            cumulative.append((bound, total))
        # The count is the +Inf bucket's, so the two always agree.
        found.append(StepHistogram(kind, step, cumulative, total, counts.get("sum", 0.0)))
    return found
