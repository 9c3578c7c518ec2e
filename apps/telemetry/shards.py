"""The fleet split into shards: which hosts a collector round samples, on which
Celery queue that round runs, and the beat entries that start every shard's round.

A host is in shard `host id mod N`. The id, not a hash of the name or a table of
assignments: it never changes, so a host stays on the same collector while N
stays (that collector's pooled SSH connection and its in-memory last sample of
the host stay useful); it is computed in SQL, so each collector reads only its
own hosts; sequential ids spread a fleet evenly; and /metrics?shard=I&shards=N
splits by the same rule, so a scraper's shard I is a collector's shard I.

`POZOL_TELEMETRY_SHARDS` (N, default 1) is how many shards there are. Shard 0's
round runs on the `telemetry` queue (the name it always had: one shard is the
single collector of before, and the deployments that serve `telemetry` keep
working), shard k's on `telemetry-k`. Each shard's round is the task
`telemetry.collect(k, N)`, one beat entry each; the shard travels in the
message, so a worker collects what beat asked for whatever its own setting says,
and `route` sends the message to that shard's queue whoever sends it. A worker
process serving one queue (`celery -A pozol worker -Q telemetry-1 --concurrency
1`, on any machine with the same database and Redis) therefore collects exactly
its shard.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import F, QuerySet

from apps.ops.schedule import Periodic

MAX_SHARDS = 1024
QUEUE = "telemetry"
COLLECT = "telemetry.collect"
# The beat entry operators know (and may have re-timed or disabled): shard 0's.
COLLECT_NAME = "pozol: sample every host's telemetry"


@dataclass(frozen=True)
class Shard:
    """The hosts whose id is `index` modulo `count`: the shards 0..count-1 of one count
    split the fleet, every host in exactly one (an id never changes, so a host stays in
    its shard while the count stays)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not (1 <= self.count <= MAX_SHARDS and 0 <= self.index < self.count):
            raise ValueError(f"a shard is 0 <= shard < shards <= {MAX_SHARDS}")

    def holds(self, host_id: int) -> bool:
        return host_id % self.count == self.index

    def filter(self, rows: QuerySet, field: str) -> QuerySet:
        if self.count == 1:
            return rows.all()
        return rows.alias(_shard=F(field) % self.count).filter(_shard=self.index)

    def sql(self, column: str) -> tuple[str, list[int]]:
        """A WHERE condition and its parameters (the column's name comes from code)."""
        if self.count == 1:
            return "TRUE", []
        return f"{column} %% %s = %s", [self.count, self.index]

    @property
    def queue(self) -> str:
        return queue(self.index)


WHOLE = Shard(0, 1)


def count() -> int:
    """How many shards the fleet's collection is split into (POZOL_TELEMETRY_SHARDS)."""
    return settings.POZOL["TELEMETRY_SHARDS"]


def configured() -> list[Shard]:
    shards = count()
    return [Shard(index, shards) for index in range(shards)]


def queue(index: int) -> str:
    return QUEUE if index == 0 else f"{QUEUE}-{index}"


def queues() -> list[str]:
    """Every shard's queue, shard 0's first."""
    return [shard.queue for shard in configured()]


def route(name: str, args, kwargs, options, task=None, **_kw) -> dict | None:
    """Celery router (CELERY_TASK_ROUTES): a collect round goes to its shard's queue.
    A round sent without a shard (as before shards existed) is shard 0's."""
    if name != COLLECT:
        return None
    return {"queue": of_call(args, kwargs).queue}


def of_call(args, kwargs) -> Shard:
    """The shard a collect call names: collect(index, count), positionally or not."""
    values = [*(args or ())][:2]
    named = kwargs or {}
    index = values[0] if values else named.get("index", 0)
    total = values[1] if len(values) > 1 else named.get("count", 1)
    return Shard(int(index), int(total))


def periodic() -> tuple[Periodic, ...]:
    """One beat entry per shard, each sending collect(k, N). Shard 0's keeps the name
    it always had; the others are named by their index only, so an entry an operator
    disabled stays disabled through a change of N that keeps it."""
    return tuple(Periodic(COLLECT_NAME if shard.index == 0
                          else f"{COLLECT_NAME}, shard {shard.index}",
                          COLLECT, "TELEMETRY_INTERVAL", args=(shard.index, shard.count))
                 for shard in configured())
