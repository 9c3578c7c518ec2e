from celery import shared_task

from apps.ops import engine, retention


@shared_task(name="ops.run_step", ignore_result=True)
def run_step(operation_id: int) -> str:
    return engine.run_step(operation_id)


@shared_task(name="ops.sweep", ignore_result=True)
def sweep() -> list[int]:
    return engine.sweep()


@shared_task(name="ops.purge", ignore_result=True)
def purge() -> int:
    return retention.purge()
