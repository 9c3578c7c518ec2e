from celery import shared_task

from apps.clones import services


@shared_task(name="clones.expire", ignore_result=True)
def expire() -> int:
    return len(services.expire())
