"""The snapshots of a host's datasets, as the last listing of the host found them.

A snapshot names its dataset by text (its natural identity), not by a foreign
key to fleet.Dataset: a dataset row goes when discovery no longer finds the
dataset, and the inventory must not vanish with it. The listing itself is the truth: every snapshot
operation and every discovery lists the host again (one `zfs get`) and this
table follows (apps.snapshots.inventory.record).

Ready for what comes next: `policy_name` is the policy the snapshot carries
in `pozol:policy` (a policy row can be matched to it by name later), `clones`
the clones that depend on it, `userrefs` its holds (a replication link or
a customer clone holds the snapshots it needs, and a held snapshot is never
destroyed) and `holds` their tags where the host's ZFS lists them.
"""

from __future__ import annotations

from django.db import models

from apps.ops.identity import NameIsIdentity
from apps.snapshots.core.commands import HOLD_TAG


class Snapshot(models.Model):
    class Origin(models.TextChoices):
        POZOL = "pozol", "made by PoZoL"
        HAND = "hand", "made by hand"
        RECEIVED = "received", "received"

    host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE, related_name="snapshots")
    dataset = models.CharField(max_length=255)
    name = models.CharField(max_length=255, help_text="The part after '@'.")
    created_at = models.DateTimeField(null=True, help_text="ZFS's creation property.")
    used = models.BigIntegerField(null=True)
    referenced = models.BigIntegerField(null=True)
    userrefs = models.PositiveIntegerField(default=0, help_text="The number of holds.")
    holds = models.JSONField(default=list, blank=True, help_text=(
        "The tags of its holds (`zfs holds`), e.g. pozol; empty where the host's ZFS "
        "cannot list them (zfs-fuse): userrefs still counts them."))
    clones = models.JSONField(default=list, blank=True,
                              help_text="Datasets cloned from this snapshot.")
    properties = models.JSONField(default=dict, blank=True,
                                  help_text="PoZoL's user properties (pozol:owner, "
                                            "pozol:policy, pozol:label) that are set.")
    origin = models.CharField(max_length=16, choices=Origin, default=Origin.HAND)
    policy_name = models.CharField(max_length=255, blank=True,
                                   help_text="pozol:policy, when set.")
    label = models.CharField(max_length=255, blank=True, help_text="pozol:label, when set.")
    seen_at = models.DateTimeField(help_text="When a listing of the host last found it.")

    class Meta:
        ordering = ["-created_at", "dataset", "name"]
        constraints = [models.UniqueConstraint(fields=["host", "dataset", "name"],
                                               name="snapshot_per_host")]
        # The API's list is in the model's order, id breaking ties: walked, not sorted.
        indexes = [models.Index(fields=["host", "-created_at"], name="snapshot_host_time"),
                   models.Index(fields=["-created_at", "dataset", "name", "-id"],
                                name="snapshot_list_idx")]

    def __str__(self) -> str:
        return self.full_name

    @property
    def full_name(self) -> str:
        return f"{self.dataset}@{self.name}"

    @property
    def held(self) -> bool:
        return self.userrefs > 0

    @property
    def held_by_others_only(self) -> bool:
        """Held, and the host's ZFS lists the tags, none of them PoZoL's: not PoZoL's to
        release (zfs-fuse lists no tags: a hold there may be PoZoL's)."""
        return self.held and bool(self.holds) and HOLD_TAG not in self.holds


class SnapshotPolicy(NameIsIdentity, models.Model):
    """A named template of snapshots (apps.snapshots.core.policy.Policy, stored).

    `name` is the policy's identity on ZFS (`pozol:policy` on every snapshot it
    takes): it cannot change once saved, or its snapshots would belong to no
    policy and never be pruned. Everything else may change; a change of counts
    is previewed before it is saved (apps.snapshots.policies.preview).
    """

    identity_noun = "policy"
    identity_where = "ZFS"

    name = models.SlugField(max_length=64, unique=True,
                            help_text="Its identity on ZFS (pozol:policy); cannot be changed.")
    prefix = models.CharField(max_length=32, default="pozol",
                              help_text="The start of the snapshot names it makes.")
    frequently = models.PositiveIntegerField(default=0)
    frequent_minutes = models.PositiveIntegerField(default=15)
    hourly = models.PositiveIntegerField(default=0)
    daily = models.PositiveIntegerField(default=0)
    weekly = models.PositiveIntegerField(default=0)
    monthly = models.PositiveIntegerField(default=0)
    checkpoint = models.BooleanField(default=False,
                                     help_text="CHECKPOINT in PostgreSQL before a cluster's "
                                               "snapshot.")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    COUNTS = ("frequently", "hourly", "daily", "weekly", "monthly")

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "snapshot policies"

    def __str__(self) -> str:
        return self.name

    def core_values(self) -> dict:
        """The fields of apps.snapshots.core.policy.Policy (which validates them)."""
        return {field: getattr(self, field) for field in (
            "name", "prefix", *self.COUNTS, "frequent_minutes", "checkpoint")}


class PolicyAssignment(models.Model):
    """A policy given to one target of a host: a PostgreSQL cluster (its data and WAL
    datasets together) or one dataset; one policy per target.

    The cluster is named by its data directory, its natural identity, not a foreign
    key: an assignment must outlive a dataset row, and a retired cluster's row.
    """

    policy = models.ForeignKey(SnapshotPolicy, on_delete=models.CASCADE,
                               related_name="assignments")
    host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE,
                             related_name="policy_assignments")
    cluster_data_dir = models.CharField(max_length=1024, blank=True,
                                        help_text="The cluster's data directory, or empty.")
    dataset = models.CharField(max_length=255, blank=True,
                               help_text="The dataset's name, or empty for a cluster.")
    assigned_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["host__name", "cluster_data_dir", "dataset"]
        constraints = [
            models.UniqueConstraint(fields=["host", "cluster_data_dir", "dataset"],
                                    name="policy_per_target"),
            models.CheckConstraint(
                condition=(models.Q(cluster_data_dir="") & ~models.Q(dataset=""))
                | (~models.Q(cluster_data_dir="") & models.Q(dataset="")),
                name="policy_target_is_cluster_or_dataset"),
        ]

    def __str__(self) -> str:
        return f"{self.policy} on {self.host}: {self.target_label}"

    @property
    def target_label(self) -> str:
        return f"cluster {self.cluster_data_dir}" if self.cluster_data_dir else self.dataset
