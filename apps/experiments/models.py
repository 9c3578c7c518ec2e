"""Experiments: one thing varied across values on one host's cluster, the same pgbench
workload run for each value in alternating order, every run's figures kept.

Custom pgbench scripts are versioned like tuning profiles: an edit adds a version, so an
experiment always names exactly the script text it ran.
"""

from __future__ import annotations

from django.conf import settings as conf
from django.db import models


class Script(models.Model):
    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    builtin = models.BooleanField(default=False, help_text="Shipped with PoZoL.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def current(self) -> ScriptVersion | None:
        return self.versions.order_by("-number").first()


class ScriptVersion(models.Model):
    script = models.ForeignKey(Script, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    text = models.TextField(help_text="The pgbench script (-f): SQL and pgbench meta-commands.")
    setup = models.TextField(blank=True, help_text="SQL run once with psql before each run.")
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(conf.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["script", "-number"]
        constraints = [models.UniqueConstraint(fields=["script", "number"],
                                               name="one_number_per_script_version")]

    def __str__(self) -> str:
        return f"{self.script.name} v{self.number}"


class Experiment(models.Model):
    class Layer(models.TextChoices):
        POSTGRES = "postgres"
        ZFS = "zfs"
        SYSCTL = "sysctl"
        MODULE = "module"

    host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE, related_name="experiments")
    cluster = models.ForeignKey("fleet.PgCluster", null=True, blank=True,
                                on_delete=models.SET_NULL, related_name="+")
    data_dir = models.CharField(max_length=1024, help_text="The cluster's, kept after rediscovery.")
    data_dataset = models.CharField(max_length=255, blank=True)
    server_version_num = models.IntegerField(null=True)
    template = models.CharField(max_length=64, blank=True)
    title = models.CharField(max_length=200)
    citation = models.TextField(blank=True, help_text="The published figure reproduced.")
    layer = models.CharField(max_length=16, choices=Layer)
    key = models.CharField(max_length=128)
    target = models.CharField(max_length=1024, blank=True,
                              help_text="The dataset, for a ZFS property.")
    values = models.JSONField(help_text="The values compared, in the first round's order.")
    repetitions = models.PositiveSmallIntegerField(default=2)
    workload = models.JSONField(help_text="scale, clients, threads, duration, protocol, mode, "
                                          "reinit, checkpoint_every")
    script_version = models.ForeignKey(ScriptVersion, null=True, blank=True,
                                       on_delete=models.PROTECT, related_name="+")
    held = models.JSONField(default=list, blank=True,
                            help_text="Settings held for the whole experiment: layer, key, value.")
    primary_metric = models.CharField(max_length=32, default="tps")
    acknowledged = models.BooleanField(default=False)
    original = models.JSONField(default=dict, blank=True,
                                help_text="What the host had before, read at the start; "
                                          "restored at the end.")
    restored = models.BooleanField(default=False)
    operation = models.ForeignKey("ops.Operation", null=True, on_delete=models.SET_NULL,
                                  related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(conf.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"experiment #{self.pk} {self.title}"

    @property
    def status(self) -> str:
        return self.operation.status if self.operation else "unknown"

    @property
    def is_active(self) -> bool:
        return bool(self.operation and self.operation.is_active)

    @property
    def before_values(self) -> list[dict]:
        """What was read at the start, and so restored: the varied setting, then each
        held one, with the value's source (a ZFS property "default" was inherited back)."""
        original = self.original or {}
        pairs = [(self.key, original.get("varied"))]
        pairs += [(h["key"], before) for h, before in
                  zip(self.held, original.get("held") or [], strict=False)]
        return [{"key": key, "value": before.get("value", ""), "source": before.get("source", "")}
                for key, before in pairs if before]


class Run(models.Model):
    """One pgbench run with one value; figures stay null where not measured."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="runs")
    position = models.PositiveSmallIntegerField()
    value = models.CharField(max_length=1024)
    repetition = models.PositiveSmallIntegerField()
    tps = models.FloatField(null=True)
    latency_ms = models.FloatField(null=True)
    transactions = models.BigIntegerField(null=True)
    wal_before = models.BigIntegerField(null=True)
    wal_after = models.BigIntegerField(null=True)
    wal_per_tx = models.FloatField(null=True)
    checkpoints_before = models.BigIntegerField(null=True)
    checkpoints = models.IntegerField(null=True, help_text="Checkpoints completed during the run.")
    compressratio = models.FloatField(null=True)
    drain_seconds = models.FloatField(null=True, help_text="How long `sync` took after the run.")
    dirty_bytes_at_end = models.BigIntegerField(null=True)
    started_at = models.DateTimeField(null=True)
    ended_at = models.DateTimeField(null=True)

    class Meta:
        ordering = ["experiment", "position"]
        constraints = [models.UniqueConstraint(fields=["experiment", "position"],
                                               name="one_run_per_position")]

    def __str__(self) -> str:
        return f"run {self.position + 1} ({self.value}) of experiment #{self.experiment_id}"

    def as_row(self) -> dict:
        return {"value": self.value, "tps": self.tps, "latency_ms": self.latency_ms,
                "wal_per_tx": self.wal_per_tx, "compressratio": self.compressratio,
                "drain_seconds": self.drain_seconds, "checkpoints": self.checkpoints,
                "ended": self.ended_at.timestamp() if self.ended_at else None}
