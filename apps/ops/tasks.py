from celery import shared_task

from apps.ops import engine, retention


@shared_task(name="ops.run_step", ignore_result=True)
def run_step(operation_id: int) -> str:
    return engine.run_step(operation_id)


# Acknowledged on receipt, unlike steps (CELERY_TASK_ACKS_LATE): beat sends another
# within SWEEP_INTERVAL, and a late ack still pending when the broker goes away can
# crash the worker as it reconnects (kombu's redis transport: AttributeError on its
# connection info, seen in tests/fleet/test_broker_down.py with a sweep a second).
@shared_task(name="ops.sweep", ignore_result=True, acks_late=False)
def sweep() -> list[int]:
    return engine.sweep()


@shared_task(name="ops.purge", ignore_result=True)
def purge() -> int:
    return retention.purge()
