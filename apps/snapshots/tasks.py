from celery import shared_task

from apps.snapshots import policies


@shared_task(name="snapshots.policy_tick", ignore_result=True)
def policy_tick() -> int:
    return len(policies.tick())
