from celery import shared_task

from apps.clones import services, usage


@shared_task(name="clones.expire", ignore_result=True)
def expire() -> int:
    """The clones tick: fail the clones whose operation ended without saying how, destroy
    the clones whose TTL is up, read every host's clone space and connections (one
    command per host), destroy idle clones."""
    services.settle_interrupted()
    started = services.expire()
    usage.refresh_all()
    return len(started) + len(usage.reap_idle())
