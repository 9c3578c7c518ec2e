"""The forms of the clone pages: a new clone (of a cluster on its host, or on a
replication target from what a link carried there), and a host's clone settings.

The forms take each value in its type; apps.clones.services checks names, roles,
spans, the snapshot, ports and CIDRs, and its refusals land beside the fields they
name (apps.ops.ui_errors.on_form). Names and roles are not stripped: a trailing
newline is refused by the service, not quietly removed.
"""

from __future__ import annotations

from datetime import datetime

from django import forms
from django.utils.dateparse import parse_datetime

from apps.clones import services
from apps.clones.core.layout import (
    CLONE_MEMORY,
    DEFAULT_CLONE_QUOTA,
    MIN_CLONE_QUOTA,
    NAME_MAX,
    UID_BASE_MAX,
    UID_BASE_MIN,
)
from apps.clones.models import CloneHostSettings
from apps.fleet.models import Host
from apps.replication.models import ReplicationLink
from apps.snapshots.models import Snapshot

MAX_MINUTES = int(services.MAX_TTL.total_seconds() // 60)
NOW = ""


def moment(text: str) -> datetime | None:
    """A moment typed with its time zone; none typed: None."""
    if not text.strip():
        return None
    try:
        parsed = parse_datetime(text.strip())
    except ValueError:
        parsed = None
    if parsed is None:
        raise forms.ValidationError("Not a moment: write it as 2026-11-20T14:06:00+01:00.")
    if parsed.tzinfo is None:
        raise forms.ValidationError("Give the moment with its time zone (+01:00, or Z).")
    return parsed


class NewCloneForm(forms.Form):
    cluster = forms.ModelChoiceField(queryset=None, empty_label=None)
    snapshot = forms.ChoiceField(required=False, help_text=(
        "A snapshot of the cluster's data (and WAL) dataset, or now: a fresh snapshot is "
        "taken first."))
    at = forms.CharField(required=False, max_length=64, label="Or a moment", help_text=(
        "Instead of a snapshot, a moment with its time zone (2026-11-20T14:06:00+01:00): "
        "the newest snapshot before it, replayed with the cluster's archived WAL to the "
        "last transaction committed by then (WAL archiving on)."))
    name = forms.CharField(required=False, strip=False, max_length=NAME_MAX, help_text=(
        "a-z 0-9 - starting with a letter; empty: one is made up."))
    ttl_minutes = forms.IntegerField(required=False, min_value=1, max_value=MAX_MINUTES,
                                     label="TTL (minutes)",
                                     help_text="Destroyed this long after creation; "
                                               "empty: kept until destroyed.")
    protected_minutes = forms.IntegerField(required=False, min_value=1, max_value=MAX_MINUTES,
                                           label="Protected for (minutes)",
                                           help_text="Destroy is refused for this long.")
    role = forms.CharField(strip=False, max_length=63, initial="dev", help_text=(
        "The role the password is for: lower-case letters, digits, _ and $."))

    def __init__(self, host: Host, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        clusters = host.clusters.all()
        self.fields["cluster"].queryset = clusters
        self.fields["cluster"].label_from_instance = _cluster_label
        self.fields["snapshot"].choices = snapshot_choices(host, clusters)

    def clean_at(self):
        return moment(self.cleaned_data.get("at", ""))

    def request(self) -> dict:
        """The arguments of services.create_clone after the host."""
        data = self.cleaned_data
        return {"snapshot": data["snapshot"] or None, "name": data["name"],
                "at": data.get("at"),
                "ttl": services.minutes(data["ttl_minutes"]),
                "protected_for": services.minutes(data["protected_minutes"]),
                "role": data["role"]}


def _cluster_label(cluster) -> str:
    return f"PostgreSQL {cluster.version or '?'} at {cluster.data_dir} (port {cluster.port})"


def snapshot_choices(host: Host, clusters) -> list:
    """"now", then each cluster's data dataset snapshots (newest first), one query."""
    by_dataset: dict[str, list[str]] = {}
    data_datasets = {c.data_dataset.name: c for c in clusters if c.data_dataset_id}
    for dataset, name in (Snapshot.objects.filter(host=host, dataset__in=data_datasets)
                          .order_by("-created_at").values_list("dataset", "name")):
        by_dataset.setdefault(dataset, []).append(name)
    choices: list = [(NOW, "now (a fresh snapshot first)")]
    for dataset, cluster in data_datasets.items():
        if names := by_dataset.get(dataset):
            choices.append((f"{cluster.data_dir} ({dataset})", [(n, n) for n in names]))
    return choices


class TargetCloneForm(forms.Form):
    """A clone on a replication target (the host whose Clones tab shows it) of one link's
    source cluster, as of a moment: a time, an LSN or a restore point, replayed from the
    snapshots and the copy of the WAL archive the link carried there. Which one of the
    three is given, and whether the target's copy reaches it, is the service's to say."""

    link = forms.ModelChoiceField(queryset=None, empty_label=None, help_text=(
        "The link whose copies the clone is made from: it is of the link's source cluster."))
    at = forms.CharField(required=False, max_length=64, label="A moment", help_text=(
        "A time with its time zone (2026-11-20T14:06:00+01:00): the clone has every "
        "transaction committed by then, and none after."))
    lsn = forms.CharField(required=False, max_length=32, label="Or a WAL position (LSN)",
                          help_text="As PostgreSQL writes it, e.g. 0/16B3748.")
    restore_point = forms.CharField(required=False, strip=False, max_length=63,
                                    label="Or a restore point", help_text=(
                                        "The name of a restore point PoZoL made on the "
                                        "source cluster."))
    name = NewCloneForm.base_fields["name"]
    ttl_minutes = NewCloneForm.base_fields["ttl_minutes"]
    protected_minutes = NewCloneForm.base_fields["protected_minutes"]
    role = NewCloneForm.base_fields["role"]

    # Drawn beside NewCloneForm on the host's Clones tab: its ids must differ.
    prefix = "target"

    def __init__(self, host: Host, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["link"].queryset = (
            ReplicationLink.objects.filter(target_host=host).exclude(archive="")
            .select_related("source_host").order_by("name"))
        self.fields["link"].label_from_instance = _link_label

    clean_at = NewCloneForm.clean_at

    def request(self) -> dict:
        """The arguments of services.create_on_target after the link."""
        data = self.cleaned_data
        return {"name": data["name"], "at": data.get("at"),
                "lsn": data["lsn"] or None, "restore_point": data["restore_point"] or None,
                "ttl": services.minutes(data["ttl_minutes"]),
                "protected_for": services.minutes(data["protected_minutes"]),
                "role": data["role"]}


def _link_label(link: ReplicationLink) -> str:
    return f"{link.name}: {link.cluster_data_dir} of {link.source_host.name}"


class CloneSettingsForm(forms.Form):
    port_min = forms.IntegerField(min_value=services.PORT_FLOOR,
                                  max_value=services.PORT_CEILING, label="Lowest port")
    port_max = forms.IntegerField(min_value=services.PORT_FLOOR,
                                  max_value=services.PORT_CEILING, label="Highest port")
    listen_address = forms.GenericIPAddressField(
        required=False, label="Listen address",
        help_text="The address clones listen on; empty: the host's address.")
    allowed_networks = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), max_length=4000,
        label="Allowed networks",
        help_text="CIDRs the clone's role may connect from, one per line; empty: "
                  "127.0.0.0/8 only.")

    memory_limit_mib = forms.IntegerField(
        required=False, min_value=CLONE_MEMORY // 2**20,
        max_value=services.MAX_MEMORY_LIMIT // 2**20, label="Memory for all clones (MiB)",
        help_text=f"Each clone counts {CLONE_MEMORY // 2**20} MiB; empty: no limit.")
    uid_base = forms.IntegerField(
        required=False, min_value=UID_BASE_MIN, max_value=UID_BASE_MAX, label="Clone uid base",
        help_text="A clone's PostgreSQL runs as OS uid and gid this plus its port, with no "
                  "passwd entry: a range no user, process or file of the host uses; "
                  "empty: unchanged.")

    clone_quota_mib = forms.IntegerField(
        required=False, min_value=MIN_CLONE_QUOTA // 2**20,
        max_value=services.MAX_CLONE_QUOTA // 2**20,
        label="Quota of each clone (MiB)",
        help_text="A clone's datasets (data and WAL) cannot grow past it; its tenant's "
                  f"clone space, when less, sets it instead. Empty: "
                  f"{DEFAULT_CLONE_QUOTA // 2**30} GiB.")

    @classmethod
    def of(cls, limits: CloneHostSettings, data=None) -> CloneSettingsForm:
        mib = limits.memory_limit // 2**20 if limits.memory_limit else None
        return cls(data, initial={"port_min": limits.port_min, "port_max": limits.port_max,
                                  "memory_limit_mib": mib, "uid_base": limits.uid_base,
                                  "clone_quota_mib": limits.clone_quota // 2**20,
                                  "listen_address": limits.listen_address or "",
                                  "allowed_networks": "\n".join(limits.allowed_networks)})

    def values(self) -> dict:
        data = self.cleaned_data
        mib = data.get("memory_limit_mib")
        return {"port_min": data["port_min"], "port_max": data["port_max"],
                "memory_limit": mib * 2**20 if mib else None, "uid_base": data.get("uid_base"),
                "clone_quota": (data["clone_quota_mib"] * 2**20 if data.get("clone_quota_mib")
                                else DEFAULT_CLONE_QUOTA),
                "listen_address": data["listen_address"] or None,
                "allowed_networks": [line.strip() for line in
                                     data["allowed_networks"].replace(",", "\n").splitlines()
                                     if line.strip()]}


class ClusterCloneForm(forms.Form):
    """A new clone of one cluster (a customer's cluster page): a snapshot or now, a name,
    a TTL, protection and the role."""

    snapshot = forms.ChoiceField(required=False, help_text=(
        "One of the cluster's snapshots, or now: a fresh snapshot is taken first."))
    at = NewCloneForm.base_fields["at"]
    name = NewCloneForm.base_fields["name"]
    ttl_minutes = NewCloneForm.base_fields["ttl_minutes"]
    protected_minutes = NewCloneForm.base_fields["protected_minutes"]
    role = NewCloneForm.base_fields["role"]

    def __init__(self, snapshots, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["snapshot"].choices = [(NOW, "now (a fresh snapshot first)"),
                                           *((s.name, s.name) for s in snapshots)]

    clean_at = NewCloneForm.clean_at
    request = NewCloneForm.request


class ResetForm(forms.Form):
    snapshot = forms.CharField(required=False, max_length=255, strip=False)
