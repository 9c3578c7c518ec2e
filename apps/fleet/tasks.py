from celery import shared_task

from apps.fleet import services


@shared_task(name="fleet.discover_all", ignore_result=True)
def discover_all() -> list[int]:
    return [operation.pk for operation in services.discover_all()]
