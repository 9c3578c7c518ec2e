"""A rollout (one profile version applied to many hosts in waves) and its hosts.

The rows are the rollout's truth: its `rollout.run` Operation reads and writes
them at every step, so a worker that dies between two steps loses nothing, and a
child operation (a discovery, an apply, a rollback) is recorded on its host's row
in the transaction that starts it, so a repeated step never starts it twice.
"""

from __future__ import annotations

from django.conf import settings as conf
from django.db import models

from apps.rollouts.core import waves


class Rollout(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        STOPPED = "stopped", "stopped (a stop condition; rolled back)"
        FAILED = "failed"
        # Its operation cancelled (POST /api/operations/{id}/cancel/): nothing more
        # starts and nothing is rolled back; what ran on the hosts stays.
        CANCELLED = "cancelled"

    class Validation(models.TextChoices):
        HEALTH = "health", "health: a query answers, the settings read back as planned"
        PGBENCH = "pgbench", "health, and pgbench before and after: TPS may not fall too far"
        NONE = "none", "none: the apply's own read-back only"

    profile_version = models.ForeignKey("tuning.ProfileVersion", on_delete=models.PROTECT,
                                        related_name="+")
    wave_size = models.PositiveIntegerField()
    validation = models.CharField(max_length=16, choices=Validation, default=Validation.HEALTH)
    pgbench_seconds = models.PositiveIntegerField(
        default=10, help_text="pgbench validation: seconds per run (tpcb, 2 clients, on "
                              "the database pgbench).")
    max_tps_drop_percent = models.PositiveIntegerField(
        default=10, help_text="pgbench validation: how far TPS may fall after the apply.")
    rollback_earlier_waves = models.BooleanField(
        default=False, help_text="On a stop, roll back the waves that passed too.")
    acknowledged = models.JSONField(default=list, blank=True, help_text=(
        "Acknowledgements the hosts' plans may require (e.g. synchronous_commit)."))
    allow_restart = models.BooleanField(
        default=False, help_text="Let the apply restart PostgreSQL for settings that need it.")
    status = models.CharField(max_length=16, choices=Status, default=Status.RUNNING)
    wave = models.PositiveIntegerField(default=0, help_text="The wave under way (0: canary).")
    waves = models.PositiveIntegerField(default=1)
    stop_reason = models.TextField(blank=True)
    paused_at = models.DateTimeField(null=True, blank=True)
    operation = models.ForeignKey("ops.Operation", null=True, blank=True,
                                  on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(conf.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"rollout #{self.pk} of {self.profile_version}"

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.RUNNING and self.outcome == self.Status.RUNNING

    @property
    def outcome(self) -> str:
        """Its status; or, when its operation ended without saying (cancelled, a
        deadline, a step that kept failing: the row is then left as it was), cancelled
        or failed."""
        operation = self.operation
        if self.status == self.Status.RUNNING and operation is not None \
                and not operation.is_active:
            return (self.Status.CANCELLED if operation.status == operation.Status.CANCELLED
                    else self.Status.FAILED)
        return self.status


class RolloutHost(models.Model):
    class State(models.TextChoices):
        WAITING = waves.WAITING
        BASELINE = waves.BASELINE, "reading its values as the rollout starts"
        READY = waves.READY, "waiting for its wave"
        CHECKING = waves.CHECKING, "checking for changes by hand"
        BENCH_BEFORE = waves.BENCH_BEFORE, "pgbench before the apply"
        APPLYING = waves.APPLYING
        VERIFYING = waves.VERIFYING, "validating"
        BENCH_AFTER = waves.BENCH_AFTER, "pgbench after the apply"
        DONE = waves.DONE
        SKIPPED = waves.SKIPPED
        FAILED = waves.FAILED
        ROLLING_BACK = waves.ROLLING_BACK, "rolling back"
        ROLLED_BACK = waves.ROLLED_BACK, "rolled back"
        ROLLBACK_FAILED = waves.ROLLBACK_FAILED, "rollback failed"

    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="hosts")
    # A host forgotten (fleet's remove_host) leaves the rollout with it: forgetting
    # means everything PoZoL recorded of it, and nothing on it is waited for any more.
    host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()
    wave = models.PositiveIntegerField(help_text="0: the canary.")
    state = models.CharField(max_length=16, choices=State, default=State.WAITING)
    reason = models.TextField(blank=True)
    baseline = models.JSONField(null=True, blank=True, help_text=(
        "What the profile would change, as the rollout began: 'layer target key' -> value."))
    critical = models.JSONField(default=list, blank=True, help_text=(
        "The host's critical findings as the rollout began."))
    turn_started_at = models.DateTimeField(null=True, blank=True)
    plan = models.ForeignKey("tuning.Plan", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    rollback_plan = models.ForeignKey("tuning.Plan", null=True, blank=True,
                                      on_delete=models.SET_NULL, related_name="+")
    bench_before = models.ForeignKey("benchmarks.Benchmark", null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")
    bench_after = models.ForeignKey("benchmarks.Benchmark", null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    operation = models.ForeignKey("ops.Operation", null=True, blank=True,
                                  on_delete=models.SET_NULL, related_name="+",
                                  help_text="The child operation it waits for now.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["rollout", "position"]
        constraints = [models.UniqueConstraint(fields=["rollout", "host"],
                                               name="one_row_per_rollout_host")]

    def __str__(self) -> str:
        return f"{self.host} in {self.rollout} ({self.state})"
