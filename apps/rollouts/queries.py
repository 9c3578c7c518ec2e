"""What the rollout lists and pages read, joined once."""

from django.db.models import Prefetch, QuerySet

from apps.rollouts.models import Rollout, RolloutHost


def rollouts() -> QuerySet:
    return Rollout.objects.select_related(
        "profile_version__profile", "operation__triggered_by", "created_by",
    ).defer("operation__state").prefetch_related(
        Prefetch("hosts", RolloutHost.objects.select_related("host").only(
            "rollout_id", "host__name", "host_id", "wave", "state", "reason", "plan_id",
            "rollback_plan_id", "operation_id", "updated_at", "position", "bench_before_id",
            "bench_after_id")))
