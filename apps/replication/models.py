"""Replication links: a source (a cluster's data and WAL datasets, or one dataset) on one
host copied by `zfs send | zfs recv` into a target parent dataset on another host.

The link row is the operator's intent plus what the last run found; what ZFS
holds on either side stays the truth (each run lists both sides again and
plans with apps.replication.core.planner). `name` is the link's identity on
the hosts (its hold tag `pozol-link-<name>` and its key's comment), so it
cannot change once saved, as a policy's name cannot.

`sources` is fixed when the link is made (resolved from the cluster's data and
WAL datasets, or the one dataset): the target names derive from them
(apps.replication.core.link.Link.target_of), and a cluster that moved would
otherwise silently start a second copy.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings
from django.db import models

from apps.ops.identity import NameIsIdentity


class ReplicationLink(NameIsIdentity, models.Model):
    identity_noun = "link"
    identity_where = "the hosts"

    class State(models.TextChoices):
        NEW = "new", "never run"
        IN_SYNC = "in_sync", "in sync"
        BUSY = "busy", "target busy"
        REFUSED = "refused", "refused"
        FAILED = "failed", "failed"

    class Mode(models.TextChoices):
        INTERMEDIATES = "-I", "every snapshot (-I)"
        NEWEST_ONLY = "-i", "newest only (-i)"

    KEEP_COUNTS = ("keep_frequently", "keep_hourly", "keep_daily", "keep_weekly",
                   "keep_monthly")

    name = models.SlugField(max_length=48, unique=True,
                            help_text="Its identity on the hosts (hold tag, key comment); "
                                      "cannot be changed.")
    source_host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE,
                                    related_name="links_out")
    cluster_data_dir = models.CharField(max_length=1024, blank=True,
                                        help_text="The source cluster's data directory, or "
                                                  "empty for a dataset.")
    sources = models.JSONField(default=list, help_text="The source datasets, fixed at "
                                                       "creation.")
    target_host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE,
                                    related_name="links_in")
    target_parent = models.CharField(max_length=255)
    mode = models.CharField(max_length=2, choices=Mode, default=Mode.INTERMEDIATES)
    interval_minutes = models.PositiveIntegerField(
        default=60, help_text="Run every N minutes; 0: only on demand or after a policy "
                              "snapshot.")
    after_policy = models.BooleanField(default=False,
                                       help_text="Run after each policy snapshot of the "
                                                 "source.")
    # The target's own retention (zrepl's keep_receiver); all 0: keep everything received.
    keep_frequently = models.PositiveIntegerField(default=0)
    keep_hourly = models.PositiveIntegerField(default=0)
    keep_daily = models.PositiveIntegerField(default=0)
    keep_weekly = models.PositiveIntegerField(default=0)
    keep_monthly = models.PositiveIntegerField(default=0)
    bandwidth_limit = models.PositiveBigIntegerField(null=True, blank=True,
                                                     help_text="Bytes per second; empty: "
                                                               "unlimited.")
    lag_threshold_minutes = models.PositiveIntegerField(default=120)
    # Stream flags (apps.replication.core.streams): -c and -L where both ends take them,
    # unless opted out; -w for encrypted datasets is not a choice.
    compressed_streams = models.BooleanField(
        default=True, help_text="Send compressed streams (zfs send -c) where both ends take "
                                "them; off: blocks are decompressed to send and the target "
                                "compresses them by its own setting.")
    large_block_streams = models.BooleanField(
        default=True, help_text="Send large-block streams (zfs send -L) where both ends take "
                                "them; off: records over 128K are split into 128K blocks. "
                                "Fixed once the link has sent.")
    large_blocks_sent = models.BooleanField(
        null=True, blank=True, editable=False,
        help_text="The -L of the link's first send, which every later send keeps; null: "
                  "nothing sent yet.")
    source_encryption = models.JSONField(
        default=dict, blank=True, editable=False,
        help_text="Each source dataset's `encryption` as the last run read it.")
    paused = models.BooleanField(default=False)

    rollback_opt_in = models.BooleanField(default=False)
    rollback_opted_in_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                             on_delete=models.SET_NULL, related_name="+")
    rollback_opted_in_at = models.DateTimeField(null=True, blank=True)

    # The link's own SSH key: the source uses it to reach the target, where it may only
    # receive into this link's target datasets (authorized_keys command=, restrict).
    public_key = models.TextField(blank=True)
    private_key_encrypted = models.TextField(blank=True, editable=False)
    key_installed_at = models.DateTimeField(null=True, blank=True)

    # What the last run found.
    state = models.CharField(max_length=16, choices=State, default=State.NEW)
    last_error = models.TextField(blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_operation = models.ForeignKey("ops.Operation", null=True, blank=True,
                                       on_delete=models.SET_NULL, related_name="+")
    last_transfer = models.JSONField(default=dict, blank=True,
                                     help_text="action, snapshot, bytes, seconds of the last "
                                               "transfer.")
    common_snapshot = models.CharField(max_length=255, blank=True,
                                       help_text="The newest snapshot common to source and "
                                                 "target (the part after '@').")
    newest_received = models.CharField(max_length=255, blank=True)
    newest_received_at = models.DateTimeField(null=True, blank=True,
                                              help_text="Its creation time: lag counts "
                                                        "from it.")
    held = models.JSONField(default=list, blank=True,
                            help_text="Holds a run may have left ('source:ds@snap').")
    resume_failed = models.BooleanField(default=False)

    # The source cluster's WAL archive the link carries (apps/wal; core/link.py says where
    # it lands) and what the target holds of it after the last run that sent it.
    archive = models.CharField(max_length=255, blank=True, editable=False, help_text=(
        "The source cluster's WAL archive dataset the last run carried; empty: none."))
    archive_snapshot = models.CharField(max_length=255, blank=True, editable=False,
                                        help_text="The archive's newest snapshot received "
                                                  "(after '@'): what a replay clones.")
    archive_listing = models.JSONField(default=dict, blank=True, editable=False, help_text=(
        "What that snapshot holds: {timeline, segments: [[number, archived at]]}."))
    archive_floor = models.FloatField(null=True, blank=True, editable=False, help_text=(
        "Epoch seconds: the oldest snapshot of the cluster on the source at that run."))
    archive_window = models.JSONField(default=list, blank=True, editable=False, help_text=(
        "The moments a replay on the target reaches, as the last run found them: "
        "[[since, until]] in epoch seconds."))

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=~models.Q(source_host=models.F("target_host")),
                                   name="link_hosts_differ"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def source_label(self) -> str:
        if self.cluster_data_dir:
            return f"cluster {self.cluster_data_dir}"
        return ", ".join(self.sources)

    @property
    def archive_spans(self) -> list[tuple[datetime, datetime]]:
        """The target's window as datetimes, for pages: [(since, until)], oldest first."""
        return [(datetime.fromtimestamp(since, UTC), datetime.fromtimestamp(until, UTC))
                for since, until in self.archive_window or []]

    def keep_counts(self) -> dict[str, int]:
        """The target's keep counts by period name (frequently, hourly, ...)."""
        return {field.removeprefix("keep_"): getattr(self, field) for field in self.KEEP_COUNTS}
