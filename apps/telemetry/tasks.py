from celery import shared_task
from django.conf import settings

from apps.telemetry import services
from apps.telemetry.shards import Shard


# One shard's round (apps.telemetry.shards), routed to its queue (`telemetry` for
# shard 0, `telemetry-<index>`); a round still queued when the next is due is
# dropped, so a stalled collector does not pile its shard's rounds up. Without
# arguments: the whole fleet, as before shards.
@shared_task(name="telemetry.collect", ignore_result=True,
             expires=settings.POZOL["TELEMETRY_INTERVAL"])
def collect(index: int = 0, count: int = 1) -> int:
    return sum(1 for taken in services.collect_fleet(Shard(index, count))
               if taken.sample is not None)


@shared_task(name="telemetry.maintain", ignore_result=True)
def maintain() -> int:
    return services.maintain().pruned
