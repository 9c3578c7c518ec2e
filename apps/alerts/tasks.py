from celery import shared_task
from django.utils import timezone

from apps.alerts import services
from apps.alerts.delivery import attempt


@shared_task(name="alerts.tick", ignore_result=True)
def tick() -> int:
    return services.tick(timezone.now())


@shared_task(name="alerts.deliver", ignore_result=True)
def deliver(pk: int) -> None:
    """One attempt; a failure that may pass schedules the next at its backoff."""
    row = attempt(pk)
    if row is not None and row.next_attempt_at is not None:
        wait = max(0.0, (row.next_attempt_at - timezone.now()).total_seconds())
        deliver.apply_async((pk,), countdown=wait)


@shared_task(name="alerts.scrub_tick", ignore_result=True)
def scrub_tick() -> int:
    return services.scrub_tick(timezone.now())
