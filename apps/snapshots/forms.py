"""The forms of the snapshot pages: the policy form of the Policies page (the model's
fields, checked by the core Policy), and the small forms posted from the host's
Snapshots tab and a policy's page, whose refusals go back there as messages."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from apps.ops.ui_input import IdField
from apps.snapshots.core.policy import FREQUENT_MINUTES, Policy, PolicyError
from apps.snapshots.models import SnapshotPolicy

CHOOSE_TARGET = "choose a cluster or a dataset from the list"


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


def _target(value: str) -> tuple[str, str]:
    """A target of the lists ("cluster:<...>" or "dataset:<name>") as (kind, value)."""
    kind, _, rest = value.partition(":")
    if kind not in ("cluster", "dataset"):
        raise ValidationError(CHOOSE_TARGET, code="invalid")
    return kind, rest


class SnapshotNowForm(forms.Form):
    """Snapshot now, from the host's Snapshots tab: a cluster (by id) or a dataset."""

    target = forms.CharField(required=False, strip=False)
    # Checked by the service (apps.snapshots.core.commands.label), as the API's is.
    label = forms.CharField(required=False, strip=False)
    hold = forms.BooleanField(required=False)
    checkpoint = forms.BooleanField(required=False)

    def clean_target(self) -> tuple[str, int | str]:
        kind, value = _target(self.cleaned_data["target"])
        if kind == "cluster":
            return kind, IdField().clean(value)
        return kind, value


class AssignForm(forms.Form):
    """A policy assigned from its page: a host's cluster (by data directory) or dataset."""

    host = IdField()
    target = forms.CharField(required=False, strip=False)

    def clean_target(self) -> dict[str, str]:
        """The target as policies.assign() takes it."""
        kind, value = _target(self.cleaned_data["target"])
        if not value:
            raise ValidationError(CHOOSE_TARGET, code="invalid")
        return {"cluster_data_dir" if kind == "cluster" else "dataset": value}
