"""The events app's Celery tasks: one delivery attempt, retried by Celery
(sending.retry_options), and the beat's tick. Nothing imports this module:
deliveries are sent by the task's name (sending.enqueue)."""

from celery import shared_task
from django.utils import timezone

from apps.events import sending, services
from apps.events.models import Delivery


@shared_task(name=sending.DELIVER_TASK, ignore_result=True, **sending.retry_options())
def deliver(pk: int) -> None:
    """One attempt, logged on the row; one that failed but may pass raises Failed, and
    Celery sends the next at its backoff (the row's next_attempt_at)."""
    row = sending.attempt(pk)
    if row is not None and row.status == Delivery.Status.PENDING:
        raise sending.Failed(f"attempt {row.attempts}: {row.last_error}")


@shared_task(name="events.tick", ignore_result=True)
def tick() -> int:
    return services.tick(timezone.now())
