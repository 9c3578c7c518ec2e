"""A cluster's WAL archive, what its last check found, and where its snapshots stand in WAL."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import models

from apps.wal.core import failures
from apps.wal.core.plan import DEFAULT_TIMEOUT


class WalArchive(models.Model):
    """Archiving PoZoL set up for one cluster (issue 23): the dataset, the settings it
    replaced (to give them back), and what the last check read."""

    class State(models.TextChoices):
        ENABLING = "enabling"
        ON = "on"
        DISABLING = "disabling"
        OFF = "off"
        FAILED = "failed"

    cluster = models.OneToOneField("fleet.PgCluster", on_delete=models.CASCADE,
                                   related_name="wal_archive")
    dataset = models.CharField(max_length=255)
    directory = models.CharField(max_length=1024, blank=True,
                                 help_text="The archive's mountpoint, once made.")
    archive_timeout = models.PositiveIntegerField(
        default=DEFAULT_TIMEOUT, help_text="Seconds: the longest a moment waits to be archived.")
    state = models.CharField(max_length=16, choices=State, default=State.ENABLING)
    before = models.JSONField(default=dict, blank=True, help_text=(
        "The settings archiving replaced: {name: {value, from_auto_conf}}."))
    error = models.TextField(blank=True)
    last_operation = models.ForeignKey("ops.Operation", null=True, blank=True,
                                       on_delete=models.SET_NULL, related_name="+")
    enabled_at = models.DateTimeField(null=True, blank=True)
    # What the last check read (pg_stat_archiver, the archive's listing, the window).
    checked_at = models.DateTimeField(null=True, blank=True)
    # The routine read that failed since checked_at (an unreachable host): shown beside
    # the window, which is still the last good read's. Not an alert of its own: the
    # host's reachability is alerted already.
    read_error = models.TextField(blank=True)
    archived_count = models.BigIntegerField(null=True, blank=True)
    failed_count = models.BigIntegerField(null=True, blank=True)
    last_archived_wal = models.CharField(max_length=64, blank=True)
    last_archived_at = models.DateTimeField(null=True, blank=True)
    last_failed_wal = models.CharField(max_length=64, blank=True)
    last_failed_at = models.DateTimeField(null=True, blank=True)
    current_wal = models.CharField(max_length=64, blank=True)
    lag_segments = models.IntegerField(null=True, blank=True)
    segment_size = models.PositiveBigIntegerField(null=True, blank=True)
    space_used = models.BigIntegerField(null=True, blank=True)
    # The archive dataset's `available` (its quota's or its pool's room): less than a
    # segment while the archiver fails is why it fails (apps/wal/alerting.py).
    space_available = models.BigIntegerField(null=True, blank=True)
    # Why the archiver fails, as the archive command's note says (core/plan.py): set
    # while the last attempt failed, cleared by a read that finds it succeeding. Host
    # text: printable, one line, bounded (commands.parse_failure).
    failure_reason = models.TextField(blank=True, help_text=(
        "Why the archiver fails: what the archive command's failed copy printed (its last "
        "500 bytes); empty while archiving succeeds."))
    failure_reason_wal = models.CharField(max_length=64, blank=True, help_text=(
        "The file the failed attempt was archiving."))
    failure_reason_at = models.DateTimeField(null=True, blank=True, help_text=(
        "When the archive command noted the reason."))
    # PoZoL's archive_command changes between releases (the failure note came later);
    # an archive enabled before keeps the old one until it is written again.
    command_outdated = models.BooleanField(default=False, help_text=(
        "The cluster archives with a command other than the one PoZoL writes for this "
        "archive now (written by an older PoZoL, or changed by hand); refresh-command "
        "writes the current one."))
    segments = models.IntegerField(null=True, blank=True)
    first_segment = models.CharField(max_length=64, blank=True)
    last_segment = models.CharField(max_length=64, blank=True)
    gaps = models.JSONField(default=list, blank=True, help_text="Missing segments: "
                                                                "[{first, last, after}].")
    window = models.JSONField(default=list, blank=True, help_text=(
        "Moments a clone can reach: [[since, until]] in epoch seconds, oldest first."))
    listing = models.JSONField(default=dict, blank=True, help_text=(
        "The archive's segments as the last check listed them: {timeline, segments: "
        "[[number, archived at (epoch seconds)]]}."))
    removed = models.BigIntegerField(default=0, help_text="Segments removed by retention.")

    class Meta:
        ordering = ["cluster_id"]

    def __str__(self) -> str:
        return f"WAL archive of {self.cluster}"

    @property
    def spans(self) -> list[tuple[datetime, datetime]]:
        """The window as datetimes, for pages: [(since, until)], oldest first."""
        return [(datetime.fromtimestamp(since, UTC), datetime.fromtimestamp(until, UTC))
                for since, until in self.window or []]

    @property
    def failure_cause(self) -> str:
        """Why the archiver fails, as the alert says it ("" without the command's reason)."""
        return failures.failure_cause(self.failure_reason, self.failure_reason_at,
                                      self.dataset)

    @property
    def active(self) -> bool:
        return self.state in (self.State.ON, self.State.ENABLING)


class WalMark(models.Model):
    """Where the cluster's WAL stood right after PoZoL took a snapshot of it while it
    archived: what lets a point-in-time clone to an LSN pick a snapshot safely."""

    archive = models.ForeignKey(WalArchive, on_delete=models.CASCADE, related_name="marks")
    snapshot = models.CharField(max_length=255, help_text="The part after '@'.")
    lsn = models.CharField(max_length=32)
    taken_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["archive", "snapshot"],
                                               name="wal_mark_per_snapshot")]

    def __str__(self) -> str:
        return f"@{self.snapshot} at {self.lsn}"


class RestorePoint(models.Model):
    """A named restore point PoZoL made (pg_create_restore_point): a clone can be asked
    for it by name, and PoZoL knows its time and WAL position to choose a snapshot."""

    archive = models.ForeignKey(WalArchive, on_delete=models.CASCADE,
                                related_name="restore_points")
    name = models.CharField(max_length=63)
    lsn = models.CharField(max_length=32)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["archive", "name"],
                                               name="restore_point_name_per_archive")]

    def __str__(self) -> str:
        return f"restore point {self.name} at {self.lsn}"
