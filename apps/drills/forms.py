"""The form of a drill schedule on the host page: a cluster of the host (or a link this
host receives), how often, and the check query. apps.drills.services checks it."""

from __future__ import annotations

from django import forms

from apps.drills.core.check import QUERY_MAX
from apps.drills.models import DEFAULT_CHECK, DrillSchedule
from apps.drills.services import MAX_INTERVAL_HOURS
from apps.fleet.models import Host


class ScheduleForm(forms.Form):
    source = forms.ChoiceField(help_text="A cluster of this host, or a link this host "
                                         "receives (the drill starts the received copy).")
    interval_hours = forms.IntegerField(min_value=1, max_value=MAX_INTERVAL_HOURS, initial=24,
                                        label="Every (hours)")
    restore = forms.ChoiceField(choices=DrillSchedule.Target.choices, required=False,
                                initial=DrillSchedule.Target.SNAPSHOT, label="Restore",
                                help_text="A random moment needs the cluster's WAL archived "
                                          "by PoZoL; it proves snapshots and WAL together.")
    check_query = forms.CharField(required=False, max_length=QUERY_MAX, widget=forms.Textarea(
        attrs={"rows": 2}), help_text=f"Run in every database; empty: {DEFAULT_CHECK}")

    def __init__(self, host: Host, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choices = [(f"cluster:{c.pk}", f"cluster {c.data_dir}") for c in host.clusters.all()]
        choices += [(f"link:{link.pk}", f"link {link.name}: {link.cluster_data_dir} from "
                                        f"{link.source_host.name}")
                    for link in host.links_in.select_related("source_host")
                    if link.cluster_data_dir]
        self.fields["source"].choices = choices

    def clean_restore(self) -> str:
        return self.cleaned_data.get("restore") or DrillSchedule.Target.SNAPSHOT

    def target(self, host: Host) -> dict:
        kind, _, pk = self.cleaned_data["source"].partition(":")
        if kind == "link":
            return {"link": host.links_in.get(pk=int(pk))}
        return {"host": host, "cluster": host.clusters.get(pk=int(pk))}


class RecoverTableForm(forms.Form):
    """Recover a dropped table of a cluster of the host: from a snapshot, or as of a
    moment (the cluster's WAL archived by PoZoL). apps.drills.table_recovery checks
    the names and the moment."""

    cluster = forms.ModelChoiceField(queryset=None, empty_label=None)
    snapshot = forms.ChoiceField(required=False, help_text=(
        "A snapshot of the cluster's data (and WAL) dataset; or leave it and give a moment."))
    at = forms.CharField(required=False, max_length=64, label="Or a moment", help_text=(
        "A moment with its time zone (2026-11-20T14:06:00+01:00): the table as the last "
        "transaction committed by then left it (the cluster's WAL archived by PoZoL)."))
    database = forms.CharField(strip=False, max_length=63)
    table = forms.CharField(strip=False, max_length=127, help_text="name or schema.name")
    into = forms.CharField(required=False, strip=False, max_length=63, help_text=(
        "The recovered table's name in the same schema; empty: <table>_recovered. "
        "Never overwritten."))

    def __init__(self, host: Host, *args, **kwargs) -> None:
        from apps.snapshots.models import Snapshot

        super().__init__(*args, **kwargs)
        clusters = host.clusters.select_related("data_dataset")
        self.fields["cluster"].queryset = clusters
        self.fields["cluster"].label_from_instance = (
            lambda c: f"PostgreSQL {c.version or '?'} at {c.data_dir} (port {c.port})")
        datasets = [c.data_dataset.name for c in clusters if c.data_dataset_id]
        self.fields["snapshot"].choices = [("", "none: a moment instead")] + [
            (str(pk), f"{dataset}@{name}") for pk, dataset, name in
            Snapshot.objects.filter(host=host, dataset__in=datasets)
            .order_by("-created_at").values_list("pk", "dataset", "name")]

    def clean_at(self):
        from apps.clones.forms import moment

        return moment(self.cleaned_data.get("at", ""))

    def clean(self) -> dict:
        data = super().clean()
        if bool(data.get("snapshot")) == bool(data.get("at")):
            self.add_error("at", "Give a snapshot or a moment (one of them).")
        return data
