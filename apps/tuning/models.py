"""Profiles (versioned desired state), their assignment to hosts, and plans.

A profile is edited by adding a version, never by changing one: a host
records the version it got, and a plan the version it was made from, so
"what was applied here" has one answer forever.
"""

from __future__ import annotations

from django.conf import settings as conf
from django.db import models

from apps.tuning.core.profiles import ProfileSettings


class Profile(models.Model):
    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    builtin = models.BooleanField(default=False, help_text="Shipped with PoZoL; copy to edit.")
    created_at = models.DateTimeField(auto_now_add=True)
    # Deleting a profile that plans were made from archives it instead: the plans keep
    # their versions ("what was applied here"), the profile leaves lists and assignment.
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def current(self) -> ProfileVersion:
        return self.versions.order_by("-number").first()

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


class ProfileVersion(models.Model):
    profile = models.ForeignKey(Profile, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    settings = models.JSONField(help_text="ProfileSettings: zfs by role, module, sysctl, postgres.")
    citations = models.JSONField(default=list, blank=True)
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(conf.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["profile", "-number"]
        constraints = [models.UniqueConstraint(fields=["profile", "number"],
                                               name="one_number_per_profile_version")]

    def __str__(self) -> str:
        return f"{self.profile.name} v{self.number}"

    @property
    def profile_settings(self) -> ProfileSettings:
        return ProfileSettings.from_dict(self.settings)


class Assignment(models.Model):
    """Which profile a host (its clusters and their datasets) should follow."""

    host = models.OneToOneField("fleet.Host", on_delete=models.CASCADE, related_name="assignment")
    profile = models.ForeignKey(Profile, on_delete=models.PROTECT, related_name="assignments")
    applied_version = models.ForeignKey(ProfileVersion, null=True, blank=True,
                                        on_delete=models.SET_NULL, related_name="+")
    assigned_at = models.DateTimeField(auto_now=True)
    assigned_by = models.ForeignKey(conf.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    drift = models.JSONField(default=list, blank=True,
                             help_text="Changes a plan would make now, from the last discovery.")
    pending_restart = models.JSONField(
        default=list, blank=True,
        help_text="Settings written that wait for a PostgreSQL restart: current, pending value.")
    drift_checked_at = models.DateTimeField(null=True, blank=True)

    class State(models.TextChoices):
        UNCHECKED = "unchecked", "not compared yet"
        IN_LINE = "in_line", "in line with the profile"
        NOT_APPLIED = "not_applied", "not applied yet"
        DRIFTED = "drifted"

    def __str__(self) -> str:
        return f"{self.host} -> {self.profile}"

    @property
    def state(self) -> str:
        """Drifted only when the host had the profile's current version and left it:
        a profile never applied (or edited since) is "not applied yet"."""
        if self.drift_checked_at is None:
            return self.State.UNCHECKED
        if not self.drift:
            return self.State.IN_LINE
        if self.applied_version_id is None or self.applied_version_id != self._current_id():
            return self.State.NOT_APPLIED
        return self.State.DRIFTED

    def _current_id(self) -> int | None:
        current = self.profile.current
        return current.pk if current else None

    @property
    def drifted(self) -> bool:
        return self.state == self.State.DRIFTED


class Plan(models.Model):
    class Kind(models.TextChoices):
        APPLY = "apply"
        ROLLBACK = "rollback"

    class Status(models.TextChoices):
        DRAFT = "draft"
        APPLYING = "applying"
        APPLIED = "applied"
        FAILED = "failed"
        ROLLED_BACK = "rolled_back"

    host = models.ForeignKey("fleet.Host", on_delete=models.CASCADE, related_name="plans")
    profile_version = models.ForeignKey(ProfileVersion, null=True, blank=True,
                                        on_delete=models.PROTECT, related_name="plans")
    kind = models.CharField(max_length=16, choices=Kind, default=Kind.APPLY)
    rollback_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="rollbacks")
    status = models.CharField(max_length=16, choices=Status, default=Status.DRAFT)
    findings = models.JSONField(default=list, blank=True)
    requires_acknowledgement = models.JSONField(default=list, blank=True)
    acknowledged = models.JSONField(default=list, blank=True)
    allow_restart = models.BooleanField(default=False)
    operation = models.ForeignKey("ops.Operation", null=True, blank=True,
                                  on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(conf.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"plan #{self.pk} ({self.kind}) for {self.host}"

    # Both read changes.all(), so a list that prefetched the changes asks nothing more
    # per plan (a plan has tens of changes, never many).
    @property
    def is_empty(self) -> bool:
        return not any(change.supported for change in self.changes.all())

    @property
    def can_roll_back(self) -> bool:
        """An apply plan that ended, well or not, and changed something on the host."""
        return (self.kind == self.Kind.APPLY
                and self.status in (self.Status.APPLIED, self.Status.FAILED)
                and self.changes_to_roll_back().exists())

    def changes_to_roll_back(self):
        """Changes that wrote, or may have written, the host: applied ones, and failed
        ones whose before-value was read (the write may have got halfway)."""
        done = (PlanChange.Status.APPLIED, PlanChange.Status.AWAITING_RESTART,
                PlanChange.Status.FAILED)
        return self.changes.filter(status__in=done).exclude(before=None)

    @property
    def needs_restart(self) -> list[str]:
        return [change.key for change in self.changes.all()
                if change.method == "pg_restart" and change.supported]


class PlanChange(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        APPLIED = "applied"
        AWAITING_RESTART = "awaiting_restart", "written; waits for a restart"
        FAILED = "failed"
        UNSUPPORTED = "unsupported"
        # Left to an experiment on this host that has not named a winner yet.
        NOT_PLANNED = "not_planned", "not planned"
        ROLLED_BACK = "rolled_back"

    # The values apps.tuning.core.changes produces; choices make them visible
    # in the admin and the API schema, and refuse anything else.
    class Layer(models.TextChoices):
        ZFS = "zfs"
        MODULE = "module"
        SYSCTL = "sysctl"
        POSTGRES = "postgres"

    class Method(models.TextChoices):
        ZFS_SET = "zfs_set"
        ZFS_SET_NEW_DATA = "zfs_set_new_data", "zfs set (new data only)"
        SYSCTL = "sysctl"
        MODULE_PARAM = "module_param"
        PG_RELOAD = "pg_reload"
        PG_RESTART = "pg_restart"

    class Risk(models.TextChoices):
        LOW = "low"
        MEDIUM = "medium"
        HIGH = "high"

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="changes")
    position = models.PositiveIntegerField()
    layer = models.CharField(max_length=16, choices=Layer)
    target = models.CharField(max_length=1024)
    key = models.CharField(max_length=128)
    # None here means "not known / not applicable", which differs from an empty
    # value (a PostgreSQL setting can be '').
    current = models.TextField(null=True, blank=True)  # noqa: DJ001
    desired = models.TextField()
    formula = models.TextField(null=True, blank=True)  # noqa: DJ001
    method = models.CharField(max_length=32, choices=Method)
    # "reset" restores what was inherited or came from postgresql.conf, rather
    # than pinning the old value locally (rollback plans use it).
    action = models.CharField(max_length=8, default="set", choices=[("set", "set"),
                                                                   ("reset", "reset")])
    supported = models.BooleanField(default=True)
    reason = models.TextField(blank=True)
    fallback_for = models.TextField(null=True, blank=True)  # noqa: DJ001
    risk = models.CharField(max_length=16, choices=Risk, default=Risk.LOW)
    findings = models.JSONField(default=list, blank=True)
    hazards = models.JSONField(
        default=list, blank=True,
        help_text="Advisor findings this change would introduce on this host: id, severity, "
                  "title, subject.")
    status = models.CharField(max_length=20, choices=Status, default=Status.PENDING)
    before = models.JSONField(null=True, blank=True,
                              help_text="What the host had, read just before writing.")
    after = models.TextField(null=True, blank=True,  # noqa: DJ001
                             help_text="Read back after writing.")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["plan", "position"]

    def __str__(self) -> str:
        return f"{self.layer} {self.target} {self.key}: {self.current} -> {self.desired}"
