"""The forms of the snapshot pages: the policy form of the Policies page (the model's
fields, checked by the core Policy), and the small forms posted from the host's
Snapshots tab and a policy's page, whose refusals go back there as messages."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from apps.api.filters import MAX_ID
from apps.common.errors import DomainError
from apps.snapshots.core.policy import FREQUENT_MINUTES, Policy, PolicyError
from apps.snapshots.models import SnapshotPolicy

CHOOSE_ONE = "choose one from the list."
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


class RefusingForm(forms.Form):
    """A form posted from a page that has no place for errors beside its fields (a small
    form on a tab, a button): its first error is the page's refusal, a DomainError that
    apps.ops.ui_errors' middleware shows on the page the operator came from."""

    def checked(self, *names: str) -> dict:
        """The cleaned values, once the fields `names` (every field when none) are valid;
        else the first error among them, raised."""
        for name in names or self.fields:
            if name in self.errors:
                error = self.errors.as_data()[name][0]
                text = error.messages[0]
                raise DomainError(f"{name}: {text}", code=error.code or "invalid",
                                  fields={name: [text]})
        if not names and self.non_field_errors():
            raise DomainError(self.non_field_errors()[0])
        return self.cleaned_data


class IdField(forms.CharField):
    """The id of a row the page listed: ASCII digits (isdecimal() alone accepts '١٢',
    isdigit() even '²'), in the range of ids; hostile or stale values are a refusal,
    never a ValueError deep in the ORM."""

    def __init__(self, **kwargs) -> None:
        super().__init__(required=False, strip=False, **kwargs)

    def to_python(self, value: object) -> int:
        raw = super().to_python(value)
        if not (raw.isascii() and raw.isdecimal()) or not 0 < int(raw) <= MAX_ID:
            raise ValidationError(CHOOSE_ONE, code="invalid_id")
        return int(raw)


def _target(value: str) -> tuple[str, str]:
    """A target of the lists ("cluster:<...>" or "dataset:<name>") as (kind, value)."""
    kind, _, rest = value.partition(":")
    if kind not in ("cluster", "dataset"):
        raise ValidationError(CHOOSE_TARGET, code="invalid")
    return kind, rest


class SnapshotNowForm(RefusingForm):
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


class AssignForm(RefusingForm):
    """A policy assigned from its page: a host's cluster (by data directory) or dataset."""

    host = IdField()
    target = forms.CharField(required=False, strip=False)

    def clean_target(self) -> dict[str, str]:
        """The target as policies.assign() takes it."""
        kind, value = _target(self.cleaned_data["target"])
        if not value:
            raise ValidationError(CHOOSE_TARGET, code="invalid")
        return {"cluster_data_dir" if kind == "cluster" else "dataset": value}
