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
