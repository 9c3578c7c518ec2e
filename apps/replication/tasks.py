from celery import shared_task

from apps.replication import services


@shared_task(name="replication.tick", ignore_result=True)
def tick() -> int:
    return len(services.tick())
