from celery import shared_task

from apps.clones import services, usage


@shared_task(name="clones.expire", ignore_result=True)
def expire() -> int:
    """The clones tick: destroy the clones whose TTL is up, read every host's clone space
    and connections (one command per host), destroy idle clones."""
    started = services.expire()
    usage.refresh_all()
    return len(started) + len(usage.reap_idle())
