"""Hosts and what discovery learned about them.

Each discovery updates a host's pools, datasets, clusters and disks in place (in
one transaction, so they always show one consistent moment of the host): a row
keeps its id for as long as what it stands for exists on the host, matched by
its natural identity (apps/fleet/recording.py). A cluster discovery no longer
finds is kept, marked not running, until the operator retires it.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models, transaction

from apps.fleet import credentials, validators
from apps.fleet.alert_kinds import HOST_KEY_CHANGED, UNREACHABLE
from apps.remote.facts.host import HostFacts
from apps.remote.facts.postgres import setting_row

host_name_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9-]{0,62}$", "Use lower-case letters, digits and '-' (at most 63).")
address_validator = RegexValidator(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9.:-]*[A-Za-z0-9])?$",
    "A host name or an IP address.")
user_validator = RegexValidator(r"^[a-z_][a-z0-9_-]{0,31}$", "A Linux user name.")
work_dir_validator = RegexValidator(
    r"^/[A-Za-z0-9/_.+@:-]*$", "An absolute path of letters, digits and / _ . + @ : -")


def default_work_dir() -> str:
    return settings.POZOL["DEFAULT_WORK_DIR"]


class HostQuerySet(models.QuerySet):
    def search(self, text: str) -> HostQuerySet:
        """Hosts whose name or address contains the text (what an operator types)."""
        text = text.strip()
        if not text:
            return self
        return self.filter(models.Q(name__icontains=text) | models.Q(address__icontains=text))

    def with_open_alerts(self) -> HostQuerySet:
        """Each host's open alerts (their messages) on `open_alert_rows`, in one query.
        The model is apps/alerts' Alert, reached through its relation to Host, so
        fleet imports nothing of apps/alerts."""
        alert = self.model.alerts.field.model
        return self.prefetch_related(models.Prefetch(
            "alerts", alert.objects.filter(resolved_at=None).only("host_id", "message"),
            to_attr="open_alert_rows"))


class Host(models.Model):
    class KeyState(models.TextChoices):
        UNVERIFIED = "unverified", "not yet contacted"
        AWAITING = "awaiting_confirmation", "fingerprint awaits confirmation"
        REJECTED = "rejected", "fingerprint did not match"
        PINNED = "pinned", "pinned"
        CHANGED = "changed", "CHANGED: work stopped"

    class CredentialKind(models.TextChoices):
        PASTED = "pasted", "pasted private key"
        GENERATED = "generated", "control-plane key pair"

    name = models.CharField(max_length=63, unique=True, validators=[host_name_validator])
    address = models.CharField(max_length=253, validators=[address_validator])
    port = models.PositiveIntegerField(default=22, validators=[MinValueValidator(1),
                                                               MaxValueValidator(65535)])
    user = models.CharField(max_length=32, default="root", validators=[user_validator])
    work_dir = models.CharField(max_length=255, default=default_work_dir,
                                validators=[work_dir_validator],
                                help_text="Where PoZoL keeps its own files on the host.")
    authorized_keys_file = models.CharField(
        max_length=255, blank=True,
        validators=[work_dir_validator, validators.authorized_keys_file],
        help_text="Where this host's sshd reads the SSH user's authorized keys (a "
                  "replication link installs its receive-only key there); empty: "
                  "~/.ssh/authorized_keys.")
    credential_kind = models.CharField(max_length=16, choices=CredentialKind)
    private_key_encrypted = models.TextField(editable=False)
    public_key = models.TextField(blank=True, help_text="Install in authorized_keys.")
    expected_fingerprint = models.CharField(max_length=100, blank=True)
    trust_on_first_use = models.BooleanField(default=False)
    host_key = models.TextField(blank=True, help_text="The pinned host key line.")
    host_key_fingerprint = models.CharField(max_length=100, blank=True)
    host_key_state = models.CharField(max_length=24, choices=KeyState,
                                      default=KeyState.UNVERIFIED)
    presented_host_key = models.TextField(blank=True)
    presented_fingerprint = models.CharField(max_length=100, blank=True)
    reachable = models.BooleanField(null=True, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    last_discovery_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_code = models.CharField(max_length=64, blank=True)
    facts = models.JSONField(default=dict, blank=True)
    # Copied out of facts at discovery so that lists never read facts (about 68 KB
    # a host) to show one short string.
    zfs_version = models.CharField(max_length=64, blank=True)
    # The advisor's findings counted by severity ({"critical": 1, "warning": 2}),
    # written by the app that advises (tuning) when facts are recorded or the
    # assigned profile changes, for the same reason: lists never read facts.
    # None until first counted.
    findings_by_severity = models.JSONField(null=True, blank=True, default=None)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    objects = HostQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    # Checked in clean_fields rather than as field validators: the rules are
    # not schema, and field validators are recorded in migrations.
    FIELD_RULES = {"address": validators.host_address, "work_dir": validators.work_dir}

    def clean_fields(self, exclude=None) -> None:
        exclude = set(exclude or ())
        errors: dict = {}
        try:
            super().clean_fields(exclude)
        except ValidationError as exc:
            errors = exc.update_error_dict(errors)
        for name, rule in self.FIELD_RULES.items():
            if name in exclude or name in errors:
                continue
            try:
                rule(getattr(self, name))
            except ValidationError as exc:
                errors.setdefault(name, []).extend(exc.error_list)
        if errors:
            raise ValidationError(errors)

    # ---- credentials and keys ----
    def set_private_key(self, text: str) -> None:
        self.private_key_encrypted = credentials.encrypt(text)

    def ssh_target(self, *, trust_on_first_use: bool = False):
        from apps.remote.ssh import Target

        return Target(
            name=self.name, address=self.address, port=self.port, user=self.user,
            private_key=credentials.decrypt(self.private_key_encrypted),
            host_key=self.host_key or None, trust_on_first_use=trust_on_first_use,
        )

    @property
    def host_key_changed(self) -> bool:
        return self.host_key_state == self.KeyState.CHANGED

    @property
    def is_pinned(self) -> bool:
        return self.host_key_state == self.KeyState.PINNED

    def pin_host_key(self, line: str, fingerprint: str) -> None:
        self.host_key, self.host_key_fingerprint = line, fingerprint
        self.presented_host_key = self.presented_fingerprint = ""
        self.host_key_state = self.KeyState.PINNED
        self.save()
        HOST_KEY_CHANGED.resolve(self)

    def record_host_key_change(self, exc) -> None:
        with transaction.atomic():
            Host.objects.filter(pk=self.pk).update(
                host_key_state=self.KeyState.CHANGED, presented_fingerprint=exc.presented,
                last_error=str(exc), last_error_code=exc.code)
            HOST_KEY_CHANGED.raise_once(
                self, f"SSH host key changed: expected {exc.expected}, the host "
                      f"presented {exc.presented}. All work on this host is stopped.")
        self.refresh_from_db()

    def record_unreachable(self, exc) -> None:
        """Discovery could not get in (no answer, refused, timed out, key refused):
        say so on the host and raise one alert until the host is reached again."""
        with transaction.atomic():
            Host.objects.filter(pk=self.pk).update(
                reachable=False, last_error=str(exc),
                last_error_code=getattr(exc, "code", "error"))
            UNREACHABLE.raise_once(self, f"{self.name} could not be reached: {exc}")
        self.refresh_from_db(fields=["reachable", "last_error", "last_error_code"])

    def record_error(self, exc) -> None:
        """Discovery reached the host but failed there: the host is not unreachable."""
        Host.objects.filter(pk=self.pk).update(
            last_error=str(exc), last_error_code=getattr(exc, "code", "error"))
        self.refresh_from_db(fields=["last_error", "last_error_code"])

    def hold_discovered_rows(self) -> None:
        """Keep discovery from changing this host's pools, datasets, clusters and disks
        until the caller's transaction ends (recording facts takes the same lock first).

        A row that points at one of them (a benchmark's cluster, say) and is recorded
        while a discovery deletes it (a dataset gone from the host) or the operator
        retires it (a cluster) would point at a deleted row when both commit.
        NO KEY UPDATE: the lock does not hold up rows that merely reference the host.
        """
        list(Host.objects.select_for_update(no_key=True).filter(pk=self.pk)
             .values_list("pk", flat=True))

    def resolve_unreachable(self) -> None:
        UNREACHABLE.resolve(self)

    # ---- how much of the host we know ----
    class Reach(models.TextChoices):
        NEVER = "never", "never reached"
        STALE = "stale", "not reachable now"
        REACHED = "reached", "reached"

    @property
    def reach(self) -> str:
        """Never reached (nothing is known), reached at the last discovery, or not
        reachable now (what is shown is from last_seen_at, possibly stale)."""
        if self.last_seen_at is None:
            return self.Reach.NEVER
        if self.reachable is False or self.host_key_changed:
            return self.Reach.STALE
        return self.Reach.REACHED

    @property
    def never_reached(self) -> bool:
        return self.reach == self.Reach.NEVER

    def typed_facts(self) -> HostFacts | None:
        """The recorded facts as HostFacts, the shape tuning reads; None before discovery.

        The one place stored facts become typed: pages and the API keep the JSON."""
        return HostFacts.from_dict(self.facts) if self.facts else None

    # ---- what the overview shows ----
    @staticmethod
    def zfs_version_of(facts: dict) -> str:
        zfs = facts.get("zfs") or {}
        return (zfs.get("version") or zfs.get("implementation") or "")[:64]

    KEY_MODULE_PARAMS = ("zfs_txg_timeout", "zfs_arc_max", "zfs_prefetch_disable",
                         "zfs_dmu_offset_next_sync", "zfs_bclone_enabled")

    @property
    def key_module_params(self) -> list[tuple[str, object]]:
        params = self.facts.get("module_params") or {}
        return [(name, params[name]) for name in self.KEY_MODULE_PARAMS if name in params]

    @property
    def open_alerts(self):
        # `alerts` is apps/alerts' Alert.host (its related_name): read through the
        # relation, so fleet imports nothing of apps/alerts.
        return self.alerts.filter(resolved_at=None)


class Pool(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="pools")
    name = models.CharField(max_length=255)
    health = models.CharField(max_length=32, blank=True)
    size = models.BigIntegerField(null=True)
    allocated = models.BigIntegerField(null=True)
    free = models.BigIntegerField(null=True)
    fragmentation = models.IntegerField(null=True)
    capacity = models.IntegerField(null=True)
    ashift = models.IntegerField(null=True)
    has_log = models.BooleanField(default=False)
    has_cache = models.BooleanField(default=False)
    vdevs = models.JSONField(default=list, blank=True)
    block_cloning = models.CharField(
        max_length=16, blank=True, help_text="The block_cloning feature: disabled, enabled or "
                                             "active; empty where the ZFS has no such feature.")

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["host", "name"], name="pool_per_host")]

    def __str__(self) -> str:
        return f"{self.host}:{self.name}"


class PoolReserve(models.Model):
    """The free space an operator keeps on one pool (apps.fleet.core.room): bytes, or
    percent of the pool. Keyed by host and pool name, not a foreign key to the pool row,
    so it survives discovery replacing the host's pools."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="pool_reserves")
    pool = models.CharField(max_length=255)
    reserve_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bytes kept free; empty: reserve_percent.")
    reserve_percent = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Percent of the pool kept free (when no bytes).")

    class Meta:
        ordering = ["pool"]
        constraints = [models.UniqueConstraint(fields=["host", "pool"],
                                               name="pool_reserve_per_host")]

    def __str__(self) -> str:
        return f"reserve of {self.host}:{self.pool}"


class Dataset(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="datasets")
    pool = models.ForeignKey(Pool, null=True, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=255)
    type = models.CharField(max_length=16, default="filesystem")
    mountpoint = models.CharField(max_length=1024, blank=True)
    used = models.BigIntegerField(null=True)
    available = models.BigIntegerField(null=True)
    referenced = models.BigIntegerField(null=True)
    usedbysnapshots = models.BigIntegerField(
        null=True, help_text="Bytes only this dataset's snapshots hold; null: not known.")
    recordsize = models.BigIntegerField(null=True)
    compression = models.CharField(max_length=32, blank=True)
    compressratio = models.FloatField(null=True)
    atime = models.CharField(max_length=8, blank=True)
    logbias = models.CharField(max_length=16, blank=True)
    primarycache = models.CharField(max_length=16, blank=True)
    sync = models.CharField(max_length=16, blank=True, help_text="Empty where unsupported.")
    properties = models.JSONField(default=dict, blank=True,
                                  help_text="Every property read: {name: {value, source}}.")

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["host", "name"], name="dataset_per_host")]

    def __str__(self) -> str:
        return f"{self.host}:{self.name}"

    @property
    def direct(self) -> str:
        """The `direct` property (Direct I/O, OpenZFS 2.3+); empty where the ZFS lacks it."""
        entry = (self.properties or {}).get("direct") or {}
        value = entry.get("value") if isinstance(entry, dict) else None
        return value if isinstance(value, str) and value != "-" else ""


class PgCluster(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="clusters")
    data_dir = models.CharField(max_length=1024)
    port = models.PositiveIntegerField(null=True)
    version = models.CharField(max_length=32, blank=True)
    server_version_num = models.IntegerField(null=True)
    wal_dir = models.CharField(max_length=1024, blank=True)
    socket_dir = models.CharField(max_length=1024, blank=True)
    bin_dir = models.CharField(max_length=1024, blank=True)
    owner = models.CharField(max_length=32, blank=True)
    # False: the last discovery found no postmaster for this data directory (stopped,
    # crashed or gone); the row keeps its id, and what points at it, until retired.
    running = models.BooleanField(default=True)
    last_seen_at = models.DateTimeField(null=True, blank=True, help_text=(
        "When a discovery last found it running."))
    data_checksums = models.BooleanField(null=True)
    data_dataset = models.ForeignKey(Dataset, null=True, on_delete=models.SET_NULL,
                                     related_name="+")
    wal_dataset = models.ForeignKey(Dataset, null=True, on_delete=models.SET_NULL,
                                    related_name="+")
    settings = models.JSONField(default=list, blank=True,
                                help_text="pg_settings rows: name, setting, unit, context, source.")
    # Where its configuration lives and who starts it (issue 21): Debian's packaged
    # clusters keep it in /etc/postgresql/<major>/<name>/ and run as a systemd unit.
    config_file = models.CharField(max_length=1024, blank=True)
    hba_file = models.CharField(max_length=1024, blank=True)
    ident_file = models.CharField(max_length=1024, blank=True)
    packaged_as = models.CharField(max_length=128, blank=True,
                                   help_text="postgresql-common's <major>/<name>, if packaged.")
    systemd_unit = models.CharField(max_length=256, blank=True,
                                    help_text="The postgresql@ unit systemd runs it as.")
    pg_ctlcluster = models.BooleanField(default=False, help_text=(
        "postgresql-common manages it (pg_ctlcluster, start.conf)."))

    class Meta:
        ordering = ["port"]
        constraints = [models.UniqueConstraint(fields=["host", "data_dir"],
                                               name="cluster_per_host")]

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    KEY_SETTINGS = ("shared_buffers", "effective_cache_size", "work_mem", "max_connections",
                    "full_page_writes", "wal_level", "synchronous_commit", "wal_sync_method",
                    "max_wal_size", "checkpoint_timeout", "wal_compression", "huge_pages")

    def setting(self, name: str) -> dict | None:
        return setting_row(self.settings, name)

    def target(self, database: str = "postgres"):
        """Where commands reach this cluster; raises InvalidValue for a row that
        discovery could not fill (no socket, an owner outside the naming rules)."""
        from apps.remote.cluster import ClusterTarget

        return ClusterTarget(owner=self.owner, bin_dir=self.bin_dir, socket_dir=self.socket_dir,
                             port=self.port, data_dir=self.data_dir, database=database,
                             **self.control())

    def control(self) -> dict:
        """Who starts and stops it, for ClusterTarget.control: its systemd unit while
        systemd is the host's PID 1, else postgresql-common's pg_ctlcluster, else pg_ctl."""
        systemd = bool((self.host.facts or {}).get("has_systemd"))
        inside = self.data_dir.rstrip("/") + "/"
        return {"unit": (self.systemd_unit or None) if systemd else None,
                "packaged_as": (self.packaged_as or None) if self.pg_ctlcluster else None,
                "config_file": (self.config_file if self.config_file
                                and not self.config_file.startswith(inside) else None)}

    @property
    def external_configuration(self) -> bool:
        """Whether a configuration file lives outside the data directory."""
        inside = self.data_dir.rstrip("/") + "/"
        return any(path and not path.startswith(inside)
                   for path in (self.config_file, self.hba_file, self.ident_file))

    @property
    def down_reason(self) -> str | None:
        """Why work that needs this cluster running is refused; None while it runs."""
        if self.running:
            return None
        seen = (f"discovery last found it running at {self.last_seen_at:%Y-%m-%d %H:%M} UTC"
                if self.last_seen_at else "discovery has not found it running")
        return f"the cluster at {self.data_dir} on {self.host.name} is down: {seen}"

    @property
    def key_settings(self) -> list[dict]:
        return [row for name in self.KEY_SETTINGS if (row := self.setting(name))]


class RetiredCluster(models.Model):
    """A cluster the operator retired, and when: a discovery that read the host before
    then may have seen it still running, so recording it must not bring it (or the
    datasets the retire destroyed) back (apps/fleet/recording.py without_retired).
    One row per data directory: a later retire there moves `retired_at` on."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="retired_clusters")
    data_dir = models.CharField(max_length=1024)
    datasets = models.JSONField(default=list, blank=True, help_text=(
        "The datasets destroyed with it (each with what is below it)."))
    retired_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "data_dir"],
                                               name="retired_cluster_per_host")]

    def __str__(self) -> str:
        return f"{self.host}:{self.data_dir} retired {self.retired_at:%Y-%m-%d %H:%M:%S}"


class Disk(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="disks")
    name = models.CharField(max_length=64)
    type = models.CharField(max_length=16, blank=True)
    size = models.BigIntegerField(null=True)
    rotational = models.BooleanField(null=True)
    model = models.CharField(max_length=128, blank=True)
    transport = models.CharField(max_length=16, blank=True)
    write_cache = models.CharField(max_length=16, blank=True,
                                   help_text="/sys/block/*/queue/write_cache")
    volatile_write_cache = models.BooleanField(null=True, help_text="nvme get-feature -f 6")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.host}:{self.name}"
