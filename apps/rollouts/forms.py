"""The new-rollout form of the rollouts page: types here, the rules in the service the
API shares."""

from __future__ import annotations

from django import forms

from apps.fleet.models import Host
from apps.rollouts.models import Rollout
from apps.tuning.models import Profile


class NewRolloutForm(forms.Form):
    profile = forms.ModelChoiceField(queryset=Profile.objects.filter(archived_at=None))
    hosts = forms.ModelMultipleChoiceField(queryset=Host.objects.defer("facts").order_by("name"),
                                           widget=forms.CheckboxSelectMultiple)
    canary = forms.ModelChoiceField(queryset=Host.objects.defer("facts").order_by("name"),
                                    required=False, empty_label="the first host")
    wave_size = forms.IntegerField(min_value=1, max_value=1000, initial=2)
    validation = forms.ChoiceField(choices=Rollout.Validation.choices)
    pgbench_seconds = forms.IntegerField(min_value=1, max_value=600, initial=10)
    max_tps_drop_percent = forms.IntegerField(min_value=0, max_value=100, initial=10)
    rollback_earlier_waves = forms.BooleanField(required=False)
    allow_restart = forms.BooleanField(required=False)
