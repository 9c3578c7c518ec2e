"""The alerts app's Celery tasks: the beat's tick and scrub tick, and one delivery
attempt, retried by Celery (delivery.retry_options). Nothing imports this module:
deliveries are sent by the task's name (delivery.enqueue)."""

from celery import shared_task
from django.utils import timezone

from apps.alerts import delivery, services
from apps.alerts.models import Delivery


@shared_task(name="alerts.tick", ignore_result=True)
def tick() -> int:
    return services.tick(timezone.now())


@shared_task(name=delivery.DELIVER_TASK, ignore_result=True, **delivery.retry_options())
def deliver(pk: int) -> None:
    """One attempt, logged on the row; one that failed but may pass raises Failed, and
    Celery sends the next at its backoff (the row's next_attempt_at)."""
    row = delivery.attempt(pk)
    if row is not None and row.status == Delivery.Status.PENDING:
        raise delivery.Failed(f"attempt {row.attempts}: {row.last_error}")


@shared_task(name="alerts.scrub_tick", ignore_result=True)
def scrub_tick() -> int:
    return services.scrub_tick(timezone.now())
