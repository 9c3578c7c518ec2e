"""The new-experiment form of the experiments page, read by a Django form: the types
here, what a value may be in the service the API shares."""

from __future__ import annotations

from django import forms

from apps.fleet.models import Host

_WORKLOAD = ("scale", "clients", "duration", "checkpoint_every")


class NewExperimentForm(forms.Form):
    """A template on a host; the values and workload left empty are the template's."""

    host = forms.ModelChoiceField(queryset=Host.objects.all())
    template = forms.CharField(required=False)
    values = forms.CharField(required=False, help_text="comma-separated")
    repetitions = forms.IntegerField(required=False)
    scale = forms.IntegerField(required=False)
    clients = forms.IntegerField(required=False)
    duration = forms.IntegerField(required=False)
    checkpoint_every = forms.IntegerField(required=False)
    acknowledged = forms.BooleanField(required=False)

    def spec(self) -> dict:
        """The experiment as the service (and the API) takes it."""
        data = self.cleaned_data
        spec: dict = {"template": data["template"], "acknowledged": data["acknowledged"],
                      "workload": {name: data[name] for name in _WORKLOAD
                                   if data[name] is not None}}
        if values := [value.strip() for value in data["values"].split(",") if value.strip()]:
            spec["values"] = values
        if data["repetitions"] is not None:
            spec["repetitions"] = data["repetitions"]
        return spec
