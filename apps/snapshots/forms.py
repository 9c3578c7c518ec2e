"""The policy form of the Policies page: the model's fields, checked by the core Policy."""

from __future__ import annotations

from django import forms

from apps.snapshots.core.policy import FREQUENT_MINUTES, Policy, PolicyError
from apps.snapshots.models import SnapshotPolicy


class PolicyForm(forms.ModelForm):
    frequent_minutes = forms.TypedChoiceField(
        coerce=int, choices=[(m, f"{m} min") for m in FREQUENT_MINUTES], initial=15,
        label="Frequent period")
    previewed = forms.CharField(required=False, widget=forms.HiddenInput)

    class Meta:
        model = SnapshotPolicy
        fields = ["name", "prefix", "frequently", "frequent_minutes", "hourly", "daily",
                  "weekly", "monthly", "checkpoint", "enabled"]
        labels = {"frequently": "Frequent snapshots to keep", "hourly": "Hourly to keep",
                  "daily": "Daily to keep", "weekly": "Weekly to keep",
                  "monthly": "Monthly to keep", "checkpoint": "CHECKPOINT first (clusters)"}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:  # its identity on ZFS
            self.fields["name"].disabled = True
            self.fields["name"].help_text = "A policy's name cannot change."

    def clean(self) -> dict:
        data = super().clean()
        values = {k: data[k] for k in Policy.__dataclass_fields__ if k in data}
        if len(values) == len(Policy.__dataclass_fields__):
            try:
                Policy(**values)
            except PolicyError as exc:
                self.add_error(exc.field if exc.field in self.fields else None, str(exc))
        return data

    def proposed(self) -> dict:
        """The core values of the form as posted (after clean)."""
        return {k: self.cleaned_data[k] for k in Policy.__dataclass_fields__}
