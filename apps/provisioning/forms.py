"""The new-cluster form of the host page: each value in its type; the service checks
the rest against the host's facts, and its refusals land beside the fields they name."""

from __future__ import annotations

from django import forms

from apps.provisioning import services
from apps.provisioning.core.layout import NAME_MAX
from apps.tuning.models import Profile


class NewClusterForm(forms.Form):
    major = forms.IntegerField(min_value=9, max_value=99, label="PostgreSQL major",
                               help_text="One the host runs or has installed "
                                         "(as discovery found).")
    name = forms.CharField(max_length=NAME_MAX, strip=False, help_text=(
        "a-z 0-9 _ starting with a letter: its datasets are <pool>/postgres/<name>."))
    port = forms.IntegerField(required=False, min_value=1024, max_value=65535,
                              help_text="Empty: the next free one from 5432.")
    pool = forms.CharField(required=False, max_length=255, strip=False,
                           help_text="Empty: the pool with the most free space.")
    profile = forms.ModelChoiceField(
        queryset=Profile.objects.filter(archived_at=None), required=False,
        empty_label="none: the references' layout, stock settings")

    def __init__(self, host, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        majors = services.offered_majors(host)
        if majors:
            self.fields["major"].help_text = (
                "One the host runs or has installed, as discovery found: "
                + ", ".join(str(m) for m in majors) + ".")
            if not self.is_bound:
                self.initial["major"] = majors[-1]

    def request(self) -> dict:
        data = self.cleaned_data
        return {"major": data["major"], "name": data["name"], "port": data["port"],
                "pool": data["pool"] or None, "profile": data["profile"]}
