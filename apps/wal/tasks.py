from celery import shared_task

from apps.wal import services


@shared_task(name="wal.tick", ignore_result=True)
def tick() -> int:
    """Start a check of every archive that is due one."""
    return len(services.tick())
