import json

from django import forms

from apps.tuning.core.profiles import EXPERIMENT, ProfileSettings
from apps.tuning.models import Profile


class ProfileForm(forms.Form):
    name = forms.CharField(max_length=100)
    description = forms.CharField(required=False, max_length=2000,
                                  widget=forms.Textarea(attrs={"rows": 2}))
    settings = forms.CharField(widget=forms.Textarea(attrs={"rows": 24, "class": "code"}),
                               max_length=20000,
                               help_text="Values may be formulas: ram / 4, min(ram / 16, 2GB)."
                                         f' A data or wal recordsize may be "{EXPERIMENT}":'
                                         " the value the newest finished recordsize"
                                         " experiment on each host named the winner (not"
                                         " planned until one has).")
    note = forms.CharField(required=False, max_length=300, help_text="What changed, and why.")

    def clean_settings(self) -> dict:
        try:
            data = json.loads(self.cleaned_data["settings"])
            return ProfileSettings.from_dict(data).to_dict()
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            raise forms.ValidationError(f"not valid profile settings: {exc}") from None


class AssignForm(forms.Form):
    profile = forms.ModelChoiceField(queryset=Profile.objects.filter(archived_at=None))


class RollbackForm(forms.Form):
    allow_restart = forms.BooleanField(required=False, label="PostgreSQL may be restarted")


class ApplyForm(forms.Form):
    allow_restart = forms.BooleanField(required=False,
                                       label="PostgreSQL may be restarted for this apply")
    acknowledge = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, required: list[str] = (), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["acknowledge"].choices = [
            (risk, f"I accept the risk '{risk}': up to about one second of committed "
                   "transactions can be lost on a crash") for risk in required]
