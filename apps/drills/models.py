"""Restore drills: proof, on a schedule, that a cluster's newest snapshot (or the newest
one a replication link received) really starts as PostgreSQL and answers a query.

A schedule names what to drill: a cluster on its own host, or a replication link
whose target holds the received copies (the drill runs on the target host). Each run
is a DrillRun with the time each part took (clone, start, check, destroy), the check's
answer per database, and on failure PostgreSQL's log tail. The drill's clone is
PoZoL's own (named `pozol-drill-<run>`, a prefix clones refuse), never a Clone row:
members never see it and it never counts against a tenant.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.clones.core.layout import Layout

DEFAULT_CHECK = ("SELECT count(*) FROM pg_catalog.pg_class c "
                 "JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid")


class DrillSchedule(models.Model):
    class Target(models.TextChoices):
        SNAPSHOT = "snapshot", "the newest snapshot"
        RANDOM_MOMENT = "random_moment", "a random moment in the WAL archive's window"

    host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE,
                             related_name="drill_schedules",
                             help_text="Where the drill runs: the cluster's host, or the "
                                       "link's target.")
    cluster_data_dir = models.CharField(max_length=1024,
                                        help_text="The cluster's data directory (for a link: "
                                                  "its source cluster's).")
    link = models.ForeignKey("replication.ReplicationLink", null=True, blank=True,
                             on_delete=models.CASCADE, related_name="drill_schedules")
    interval_hours = models.PositiveIntegerField(default=24)
    check_query = models.TextField(blank=True, help_text="Run in every database that "
                                                         "allows connections; empty: read "
                                                         "the catalog.")
    target = models.CharField(max_length=16, choices=Target, default=Target.SNAPSHOT,
                              help_text="What a run restores: the newest snapshot, or a "
                                        "moment drawn at random in the archive's window "
                                        "(a point-in-time clone: proves snapshots and "
                                        "archived WAL together).")
    enabled = models.BooleanField(default=True)
    last_started_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["host__name", "cluster_data_dir"]
        constraints = [
            models.UniqueConstraint(fields=["host", "cluster_data_dir"], name="drill_per_cluster",
                                    condition=models.Q(link=None)),
            models.UniqueConstraint(fields=["link"], name="drill_per_link",
                                    condition=~models.Q(link=None)),
        ]

    def __str__(self) -> str:
        return f"{self.host}: drill of {self.source_label}"

    @property
    def source_label(self) -> str:
        if self.link_id:
            return f"{self.cluster_data_dir} received by link {self.link.name}"
        return self.cluster_data_dir

    @property
    def query(self) -> str:
        return self.check_query or DEFAULT_CHECK


class DrillRun(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        PASSED = "passed"
        FAILED = "failed"

    schedule = models.ForeignKey(DrillSchedule, null=True, blank=True,
                                 on_delete=models.SET_NULL, related_name="runs")
    host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE, related_name="drill_runs")
    cluster_data_dir = models.CharField(max_length=1024)
    link = models.ForeignKey("replication.ReplicationLink", null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="+")
    snapshot = models.CharField(max_length=255, blank=True)
    datasets = models.JSONField(default=list, blank=True)
    check_query = models.TextField()
    status = models.CharField(max_length=8, choices=Status, default=Status.RUNNING)
    port = models.PositiveIntegerField(null=True, blank=True)
    layout = models.JSONField(default=dict, blank=True)
    clone_seconds = models.FloatField(null=True, blank=True)
    start_seconds = models.FloatField(null=True, blank=True)
    check_seconds = models.FloatField(null=True, blank=True)
    destroy_seconds = models.FloatField(null=True, blank=True)
    total_seconds = models.FloatField(null=True, blank=True)
    answers = models.JSONField(default=dict, blank=True,
                               help_text="The check's first line of output per database.")
    error = models.TextField(blank=True)
    log_tail = models.TextField(blank=True, help_text="The clone's PostgreSQL log, on failure.")
    target_time = models.DateTimeField(null=True, blank=True, help_text=(
        "A drill to a moment: the moment drawn in the archive's window."))
    reached_at = models.DateTimeField(null=True, blank=True, help_text=(
        "A drill to a moment: the last transaction the replay applied (commit time)."))
    archive_timeout = models.PositiveIntegerField(null=True, blank=True, help_text=(
        "A drill to a moment: the archive's timeout in seconds, how far before the moment "
        "the last replayed transaction may be."))
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    operation = models.ForeignKey("ops.Operation", null=True, blank=True,
                                  on_delete=models.SET_NULL, related_name="+")
    triggered_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["host", "-started_at"], name="drill_host_time")]

    def __str__(self) -> str:
        return f"{self.host}: drill #{self.pk} {self.status}"

    @property
    def clone_name(self) -> str:
        return f"pozol-drill-{self.pk}"

    def decoded_layout(self) -> Layout:
        return Layout.from_stored(self.layout)
