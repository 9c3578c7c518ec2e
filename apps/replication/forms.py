"""The forms of the replication pages: a link's settings, and a new link.

The forms take each value in its type; apps.replication.services checks them
against the core and the inventory, and its refusals land next to the fields
they name (`refused`).
"""

from __future__ import annotations

from django import forms
from django.urls import reverse

from apps.common.errors import DomainError
from apps.fleet.models import Host
from apps.ops.ui_errors import on_form
from apps.replication import services
from apps.replication.core.link import LINK_NAME_MAX
from apps.replication.models import ReplicationLink

# The service names the source as it stores it; the form has one list for both.
_SOURCE_FIELDS = ("cluster_data_dir", "dataset", "sources")


class LinkSettingsForm(forms.ModelForm):
    class Meta:
        model = ReplicationLink
        fields = list(services.EDITABLE)
        labels = {"mode": "Snapshots sent", "interval_minutes": "Run every (minutes)",
                  "after_policy": "Also run after each policy snapshot of the source",
                  "keep_frequently": "Frequent snapshots to keep on the target",
                  "keep_hourly": "Hourly to keep", "keep_daily": "Daily to keep",
                  "keep_weekly": "Weekly to keep", "keep_monthly": "Monthly to keep",
                  "bandwidth_limit": "Bandwidth limit (bytes per second)",
                  "lag_threshold_minutes": "Alert when lag exceeds (minutes)",
                  "compressed_streams": "Compressed streams (zfs send -c) where both hosts "
                                        "take them",
                  "large_block_streams": "Large-block streams (zfs send -L) where both hosts "
                                         "take them"}
        help_texts = {"after_policy": "",
                      "interval_minutes": "0: only on demand or after a policy snapshot.",
                      "keep_frequently": "The target's own retention; all 0 keeps "
                                         "everything received.",
                      "bandwidth_limit": "Empty: unlimited; otherwise 65536 (64 KiB/s) or "
                                         "more.",
                      "compressed_streams": "Off: blocks are decompressed to send and the "
                                            "target compresses them by its own setting (a "
                                            "target an older system will read).",
                      "large_block_streams": "Off: records over 128K are split into 128K "
                                             "blocks. Fixed once the link has sent. "
                                             "Encrypted datasets are always sent raw (-w), "
                                             "which keeps both."}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        sent = self.instance.large_blocks_sent if self.instance else None
        if sent is not None:  # an incremental must keep the -L of the first send
            field = self.fields["large_block_streams"]
            field.disabled = True
            self.initial["large_block_streams"] = sent  # what it sends, whatever was asked
            field.help_text = (f"Fixed: the link's copies were received "
                               f"{'with' if sent else 'without'} -L, and every later send "
                               "must match. A new link can choose again.")

    def changes(self) -> dict:
        return {name: self.cleaned_data[name] for name in services.EDITABLE}


class NewLinkForm(LinkSettingsForm):
    name = forms.CharField(max_length=LINK_NAME_MAX, help_text=(
        "a-z 0-9 _ -: the link's identity on the hosts; it cannot change."))
    source_host = forms.ModelChoiceField(queryset=Host.objects.none())
    source = forms.ChoiceField(help_text="A cluster's data and WAL datasets go together. "
                                         "It must be on the source host.")
    target_host = forms.ModelChoiceField(queryset=Host.objects.none())
    target_parent = forms.CharField(max_length=255, help_text=(
        "The dataset on the target host to receive under, e.g. backup/db1."))

    field_order = ["name", "source_host", "source", "target_host", "target_parent"]

    def __init__(self, *args, source_host: str | None = None, **kwargs) -> None:
        """`source_host`: the host chosen so far (?source_host= of the GET htmx sends when
        it changes); the Source list then holds that host's clusters and datasets only."""
        super().__init__(*args, **kwargs)
        hosts = Host.objects.only("pk", "name").order_by("name")
        self.fields["source_host"].queryset = hosts
        self.fields["target_host"].queryset = hosts
        chosen = self.data.get("source_host") if self.is_bound else source_host
        if _an_id(chosen):
            self.initial.setdefault("source_host", chosen)
            hosts = hosts.filter(pk=chosen)
        self.fields["source"].choices = _sources(
            hosts.prefetch_related("clusters", "datasets"))
        # Choosing the source host asks the page again and swaps in its Source list.
        self.fields["source_host"].widget.attrs.update({
            "hx-get": reverse("replication:new"), "hx-trigger": "change",
            "hx-target": "#id_source", "hx-select": "#id_source", "hx-swap": "outerHTML"})

    def identity(self) -> dict:
        kind, _, value = self.cleaned_data["source"].partition(":")
        return {"name": self.cleaned_data["name"],
                "source_host": self.cleaned_data["source_host"],
                "target_host": self.cleaned_data["target_host"],
                "target_parent": self.cleaned_data["target_parent"],
                "cluster_data_dir" if kind == "cluster" else "dataset": value}


def _an_id(value: object) -> bool:
    return isinstance(value, str) and value.isdigit() and int(value) < 2**63


def _sources(hosts) -> list:
    groups = []
    for host in hosts:
        options = [(f"cluster:{cluster.data_dir}",
                    f"PostgreSQL {cluster.version} at {cluster.data_dir} (data and WAL)")
                   for cluster in host.clusters.all()]
        options += [(f"dataset:{dataset.name}", f"dataset {dataset.name}")
                    for dataset in host.datasets.all() if dataset.type == "filesystem"]
        if options:
            groups.append((host.name, options))
    return groups


def refused(form: forms.Form, exc: DomainError) -> None:
    """The service's refusal beside the fields it names."""
    if "source" in form.fields and exc.fields:
        fields: dict = {}
        for name, texts in exc.fields.items():
            fields.setdefault("source" if name in _SOURCE_FIELDS else name, []).extend(texts)
        exc = DomainError(exc.message, code=exc.code, fields=fields, status=exc.status)
    on_form(form, exc)
