from django import forms

from apps.alerts.models import Channel, Rule
from apps.alerts.services import MAX_SCRUB_DAYS, MAX_SILENCE_MINUTES
from apps.fleet.models import Host


class RuleForm(forms.ModelForm):
    class Meta:
        model = Rule
        fields = ["enabled", "threshold", "hysteresis", "for_minutes", "clear_minutes"]
        widgets = {"for_minutes": forms.NumberInput(attrs={"max": 10080}),
                   "clear_minutes": forms.NumberInput(attrs={"max": 10080})}

    for_minutes = forms.IntegerField(min_value=0, max_value=10080)
    clear_minutes = forms.IntegerField(min_value=0, max_value=10080)


class ChannelForm(forms.ModelForm):
    class Meta:
        model = Channel
        fields = ["name", "kind", "target", "enabled"]
        help_texts = {"target": "E-mail addresses separated by commas, or the webhook's URL "
                                "(only hosts and networks in POZOL_ALERT_WEBHOOK_ALLOW)."}


class SilenceForm(forms.Form):
    minutes = forms.TypedChoiceField(coerce=int, initial=60, choices=[
        (60, "1 hour"), (240, "4 hours"), (1440, "1 day"), (10080, "1 week")])
    reason = forms.CharField(max_length=300, required=False)

    def clean_minutes(self) -> int:
        minutes = self.cleaned_data["minutes"]
        if not 1 <= minutes <= MAX_SILENCE_MINUTES:
            raise forms.ValidationError("out of range")
        return minutes


class ScrubForm(forms.Form):
    host = forms.ModelChoiceField(queryset=Host.objects.order_by("name"))
    pool = forms.CharField(max_length=255, strip=False)
    every_days = forms.IntegerField(min_value=1, max_value=MAX_SCRUB_DAYS, initial=30,
                                    label="Every (days)")
