"""Benchmarks: one pgbench run on a host, and validations that compare two runs.

A Benchmark keeps where it ran as text too (data directory, port), because
the operator may retire a cluster gone for good: the foreign key is then
nulled, and the figures must still say what they measured.
"""

from __future__ import annotations

from django.db import models


def empty_series() -> dict:
    return {"t": [], "tps": [], "latency_ms": [], "dirty_bytes": [], "writeback_bytes": []}


class Benchmark(models.Model):
    # pgbench's modes and protocols have one home: apps.benchmarks.core.commands.
    host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE, related_name="benchmarks")
    cluster = models.ForeignKey("fleet.PgCluster", null=True, blank=True,
                                on_delete=models.SET_NULL, related_name="benchmarks")
    data_dir = models.CharField(max_length=1024, help_text="The cluster's, kept after rediscovery.")
    port = models.PositiveIntegerField(null=True)
    server_version_num = models.IntegerField(null=True)
    database = models.CharField(max_length=63, default="pgbench")
    parameters = models.JSONField(
        default=dict, help_text="scale, init, clients, threads, duration, mode, protocol")
    operation = models.ForeignKey("ops.Operation", null=True, on_delete=models.SET_NULL,
                                  related_name="+")
    profile_version_label = models.CharField(
        max_length=200, blank=True, help_text="The tuning profile version measured, if any.")
    summary = models.JSONField(null=True, blank=True, help_text="The parsed pgbench summary.")
    series = models.JSONField(default=empty_series, blank=True,
                              help_text="Per second: t, tps, latency_ms, dirty_bytes, "
                                        "writeback_bytes.")
    wal_bytes_before = models.BigIntegerField(null=True, blank=True)
    wal_bytes_after = models.BigIntegerField(null=True, blank=True)
    wal_source = models.CharField(max_length=32, blank=True,
                                  help_text="pg_stat_wal, or the WAL position on PG13.")
    wal_bytes_per_transaction = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"benchmark #{self.pk} on {self.host}"

    @property
    def status(self) -> str:
        """The operation's status, read rather than copied so that it can never go stale
        (the engine itself fails an operation on a deadline or a changed host key)."""
        return self.operation.status if self.operation else "unknown"

    @property
    def is_active(self) -> bool:
        return bool(self.operation and self.operation.is_active)

    @property
    def tps(self) -> float | None:
        return (self.summary or {}).get("tps")

    @property
    def latency_ms(self) -> float | None:
        return (self.summary or {}).get("latency_avg_ms")


def _ratio(after: float | None, before: float | None) -> float | None:
    if after is None or not before:
        return None
    return after / before


class Validation(models.Model):
    """Before and after one change, on one host: what the change did to throughput,
    latency and WAL volume. A ratio above 1 means more (better for TPS, worse for
    latency and WAL per transaction)."""

    host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE, related_name="validations")
    before = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    after = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"validation #{self.pk} {self.label}".strip()

    @property
    def tps_ratio(self) -> float | None:
        return _ratio(self.after.tps, self.before.tps)

    @property
    def latency_ratio(self) -> float | None:
        return _ratio(self.after.latency_ms, self.before.latency_ms)

    @property
    def wal_per_tx_ratio(self) -> float | None:
        return _ratio(self.after.wal_bytes_per_transaction, self.before.wal_bytes_per_transaction)

    @property
    def same_workload(self) -> bool:
        """Whether both ran the same pgbench workload (init aside): else the ratios mislead."""
        def workload(bench: Benchmark) -> dict:
            return {k: v for k, v in bench.parameters.items() if k != "init"}
        return (workload(self.before) == workload(self.after)
                and self.before.database == self.after.database)
