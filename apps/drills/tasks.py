from celery import shared_task

from apps.drills import reconcile as reconciler
from apps.drills import services


@shared_task(name="drills.tick", ignore_result=True)
def tick() -> int:
    return len(services.tick())


@shared_task(name="drills.reconcile", ignore_result=True)
def reconcile() -> int:
    return len(reconciler.reconcile_all())
