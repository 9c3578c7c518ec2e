from celery import shared_task
from django.conf import settings

from apps.wal import services


# A round still queued when the next is due is dropped: rounds never pile up behind a
# stalled worker.
@shared_task(name="wal.tick", ignore_result=True, expires=settings.POZOL["WAL_CHECK_INTERVAL"])
def tick() -> int:
    """Read every archive that is due; returns the checks started to remove WAL."""
    return len(services.tick())
