"""The snapshots of a host's datasets, as the last listing of the host found them.

A snapshot names its dataset by text, not by a foreign key to fleet.Dataset:
discovery replaces a host's dataset rows as a whole, and the inventory must
not vanish with them. The listing itself is the truth: every snapshot
operation and every discovery lists the host again (one `zfs get`) and this
table follows (apps.snapshots.inventory.record).

Ready for what comes next: `policy_name` is the policy the snapshot carries
in `pozol:policy` (a policy row can be matched to it by name later), `clones`
the clones that depend on it and `userrefs` its holds (a replication link or
a customer clone holds the snapshots it needs, and a held snapshot is never
destroyed).
"""

from __future__ import annotations

from django.db import models


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
        indexes = [models.Index(fields=["host", "-created_at"], name="snapshot_host_time")]

    def __str__(self) -> str:
        return self.full_name

    @property
    def full_name(self) -> str:
        return f"{self.dataset}@{self.name}"

    @property
    def held(self) -> bool:
        return self.userrefs > 0
