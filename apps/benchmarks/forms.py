"""What the benchmark buttons post (a host's Benchmarks tab, a run's page), read by
Django forms: the types here, what a value may be in the service the API shares."""

from __future__ import annotations

from django import forms

from apps.benchmarks.models import Benchmark
from apps.fleet.models import Host, PgCluster

_NUMBERS = ("scale", "clients", "threads", "duration")
_TEXTS = ("database", "mode", "protocol")


class RunForm(forms.Form):
    """Run pgbench: the parameters left empty take the service's defaults."""

    cluster = forms.ModelChoiceField(queryset=PgCluster.objects.none(), required=False)
    init = forms.BooleanField(required=False)
    database = forms.CharField(required=False)
    mode = forms.CharField(required=False)
    protocol = forms.CharField(required=False)
    scale = forms.IntegerField(required=False)
    clients = forms.IntegerField(required=False)
    threads = forms.IntegerField(required=False)
    duration = forms.IntegerField(required=False)

    def __init__(self, host: Host, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["cluster"].queryset = PgCluster.objects.filter(host=host)

    def parameters(self) -> dict:
        data = self.cleaned_data
        given = {name: data[name] for name in (*_TEXTS, *_NUMBERS)
                 if data[name] not in (None, "")}
        return {"init": data["init"], **given}


class CompareForm(forms.Form):
    """A validation: this run compared with an earlier one, and what changed between."""

    before = forms.ModelChoiceField(queryset=Benchmark.objects.all())
    label = forms.CharField(required=False)
