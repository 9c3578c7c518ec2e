"""Clones: a writable copy of a PostgreSQL cluster, made from one of its snapshots on the
same host and started as a second PostgreSQL on a port of its own.

The clone's datasets hold their origin snapshot (ZFS itself refuses to destroy a
snapshot with clones, and the inventory records them, so pruning never tries).
Its password is kept encrypted only because a reset re-creates the role on a
fresh copy with the same password; it is shown once, when the clone is asked
for. The origin cluster is named by host and data directory, its natural identity
(the cluster row keeps it too).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.clones.core.layout import DEFAULT_CLONE_QUOTA, UID_BASE, Layout
from apps.fleet import credentials


class CloneHostSettings(models.Model):
    """What an operator allows clones on one host: ports, addresses, memory."""

    host = models.OneToOneField("fleet.Host", on_delete=models.CASCADE,
                                related_name="clone_settings")
    port_min = models.PositiveIntegerField(default=6500)
    port_max = models.PositiveIntegerField(default=6599)
    listen_address = models.GenericIPAddressField(
        null=True, blank=True, help_text="The address clones listen on; empty: the host's "
                                         "address.")
    allowed_networks = models.JSONField(default=list, blank=True,
                                        help_text="CIDRs a clone's role may connect from.")
    memory_limit = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bytes of RAM all clones on the host may take "
                                         "together; empty: no limit.")
    uid_base = models.PositiveBigIntegerField(
        default=UID_BASE, help_text="A clone's PostgreSQL runs as OS uid (and gid) this base "
                                    "plus its port; no passwd entry, no process and no "
                                    "other file on the host may use that range.")

    clone_quota = models.PositiveBigIntegerField(
        default=DEFAULT_CLONE_QUOTA,
        help_text="The ZFS quota of each clone on the host (data and WAL together), unless "
                  "its tenant's clone space leaves less.")

    DEFAULT_ALLOWED = ["127.0.0.0/8"]

    def __str__(self) -> str:
        return f"clone settings of {self.host}"


class Clone(models.Model):
    class State(models.TextChoices):
        CREATING = "creating"
        READY = "ready"
        RESETTING = "resetting"
        DESTROYING = "destroying"
        DESTROYED = "destroyed"
        FAILED = "failed"

    LIVE = (State.CREATING, State.READY, State.RESETTING, State.DESTROYING, State.FAILED)

    host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE, related_name="clones")
    cluster_data_dir = models.CharField(max_length=1024)
    name = models.SlugField(max_length=40)
    snapshot = models.CharField(max_length=255, blank=True,
                                help_text="The origin snapshot (the part after '@').")
    port = models.PositiveIntegerField()
    role = models.CharField(max_length=63)
    password_encrypted = models.TextField(editable=False)
    state = models.CharField(max_length=16, choices=State, default=State.CREATING)
    connection_string = models.CharField(max_length=300, blank=True)
    layout = models.JSONField(default=dict, blank=True,
                              help_text="Where the clone lives (apps.clones.core.layout).")
    expires_at = models.DateTimeField(null=True, blank=True)
    protected_until = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    last_operation = models.ForeignKey("ops.Operation", null=True, blank=True,
                                       on_delete=models.SET_NULL, related_name="+")
    tenant = models.ForeignKey("tenants.Tenant", null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="clones",
                               help_text="The tenant of the origin cluster when the clone was "
                                         "made; none for a cluster no tenant has.")
    quota = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="The ZFS quota on the clone's root dataset (bytes): "
                                         "it cannot grow past it.")
    own_snapshots = models.JSONField(
        default=list, blank=True, help_text="The snapshots taken for it (\"now\"), full "
                                            "names: destroyed with the clone unless "
                                            "something else holds them.")
    used = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bytes the clone's datasets use, as the clones tick "
                                         "last read them (zfs get used).")
    used_at = models.DateTimeField(null=True, blank=True)
    active_at = models.DateTimeField(
        null=True, blank=True, help_text="When the clones tick last saw a client connected "
                                         "(or the clone became ready): idle deletion counts "
                                         "from here.")

    # A point-in-time clone (issue 23): the moment asked (a time, or an LSN) and the time
    # of the last transaction its replay applied; empty for a clone of a snapshot.
    target_time = models.DateTimeField(null=True, blank=True, help_text=(
        "The moment asked for: the replay stops at the last transaction committed by it."))
    target_lsn = models.CharField(max_length=32, blank=True, help_text=(
        "The WAL position asked for."))
    target_name = models.CharField(max_length=63, blank=True, help_text=(
        "The restore point asked for (its time is target_time)."))
    reached_at = models.DateTimeField(null=True, blank=True, help_text=(
        "The commit time of the last transaction the replay applied."))
    archive_timeout = models.PositiveIntegerField(null=True, blank=True, help_text=(
        "The origin's archive_timeout when the clone was made (seconds)."))
    link = models.ForeignKey(
        "replication.ReplicationLink", null=True, blank=True, on_delete=models.SET_NULL,
        related_name="clones", help_text=(
            "Made on this link's target host from the copies it received (the cluster is "
            "the link's source); empty for a clone on the cluster's own host."))

    class Meta:
        ordering = ["-created_at"]
        # The API lists newest first (id breaks ties): an index walk, not a sort of every clone.
        indexes = [models.Index(fields=["created_at", "id"], name="clone_created_idx")]
        constraints = [
            # Names and ports are taken until the clone is destroyed.
            models.UniqueConstraint(fields=["host", "name"], name="clone_name_per_host",
                                    condition=~models.Q(state="destroyed")),
            models.UniqueConstraint(fields=["host", "port"], name="clone_port_per_host",
                                    condition=~models.Q(state="destroyed")),
        ]

    def __str__(self) -> str:
        return f"{self.host}: clone {self.name}"

    @property
    def protected(self) -> bool:
        return bool(self.protected_until and self.protected_until > timezone.now())

    @property
    def point_in_time(self) -> bool:
        return self.target_time is not None or bool(self.target_lsn or self.target_name)

    @property
    def on_target(self) -> bool:
        """Made on a replication target (its link may be deleted since)."""
        return self.link_id is not None or bool((self.layout.get("recovery") or {})
                                                .get("received"))

    @property
    def reached_note(self) -> str:
        """Said when the moment reached is further from the one asked than archive_timeout
        (the most a moment waits to be archived): quiet databases commit rarely."""
        if self.target_time is None or self.reached_at is None or not self.archive_timeout:
            return ""
        gap = (self.target_time - self.reached_at).total_seconds()
        if abs(gap) <= self.archive_timeout:
            return ""
        return (f"the last transaction replayed committed {abs(gap):.0f} s before the moment "
                f"asked, more than archive_timeout ({self.archive_timeout} s): nothing else "
                "committed in between, or it was not archived")

    def decoded_layout(self) -> Layout:
        return Layout.from_stored(self.layout)

    def decrypted_password(self) -> str:
        return credentials.decrypt(self.password_encrypted)
