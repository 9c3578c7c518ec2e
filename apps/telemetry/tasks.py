from celery import shared_task
from django.conf import settings

from apps.telemetry import services


# Routed to the `telemetry` queue (CELERY_TASK_ROUTES); a round still queued when
# the next is due is dropped, so a stalled collector does not pile rounds up.
@shared_task(name="telemetry.collect", ignore_result=True,
             expires=settings.POZOL["TELEMETRY_INTERVAL"])
def collect() -> int:
    return sum(1 for taken in services.collect_fleet() if taken.sample is not None)


@shared_task(name="telemetry.maintain", ignore_result=True)
def maintain() -> int:
    return services.maintain().pruned
