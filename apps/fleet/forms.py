from __future__ import annotations

from django import forms

from apps.fleet.core.room import DEFAULT_RESERVE_PERCENT, MAX_RESERVE_PERCENT
from apps.fleet.models import Host
from apps.fleet.serializers import FINGERPRINT
from apps.remote.keys import MAX_KEY_TEXT, load_private_key


class AddHostForm(forms.ModelForm):
    KEY_CHOICES = [("generate", "Make a key pair here; I will install its public key"),
                   ("paste", "Paste a private key")]
    key_source = forms.ChoiceField(choices=KEY_CHOICES, widget=forms.RadioSelect,
                                   initial="generate")
    private_key = forms.CharField(required=False, strip=False, max_length=MAX_KEY_TEXT,
                                  widget=forms.Textarea(attrs={"rows": 6}),
                                  help_text="Stored encrypted; never shown again.")
    expected_fingerprint = forms.CharField(
        required=False, help_text="Optional: SHA256:… of the host key. Without it you "
                                  "confirm the fingerprint PoZoL sees on first contact.")

    class Meta:
        model = Host
        fields = ["name", "address", "port", "user", "work_dir", "authorized_keys_file"]

    def clean_expected_fingerprint(self) -> str:
        value = self.cleaned_data["expected_fingerprint"].strip()
        if value and not FINGERPRINT.match(value):
            raise forms.ValidationError("expected SHA256: followed by 43 base64 characters")
        return value

    def clean(self):
        data = super().clean()
        if data.get("key_source") == "paste":
            try:
                load_private_key(data.get("private_key") or "")
            except ValueError as exc:
                self.add_error("private_key", str(exc))
        return data

    def service_arguments(self) -> dict:
        data = self.cleaned_data
        return {"name": data["name"], "address": data["address"], "port": data["port"],
                "user": data["user"], "work_dir": data["work_dir"],
                "authorized_keys_file": data.get("authorized_keys_file") or "",
                "private_key": data["private_key"] if data["key_source"] == "paste" else "",
                "generate_key": data["key_source"] == "generate",
                "expected_fingerprint": data["expected_fingerprint"]}


class ConfirmHostKeyForm(forms.Form):
    """The fingerprint shown beside "Confirm and discover"; the service compares it."""

    fingerprint = forms.CharField(required=False)


class PoolReserveForm(forms.Form):
    """A pool's reserve: MiB, or a percent of the pool, or neither for the default."""

    reserve_mib = forms.IntegerField(required=False, min_value=0, max_value=2**40,
                                     label="Reserve (MiB)")
    reserve_percent = forms.IntegerField(
        required=False, min_value=0, max_value=MAX_RESERVE_PERCENT,
        label="or percent of the pool",
        help_text=f"Empty both: the default, {DEFAULT_RESERVE_PERCENT}%.")

    @classmethod
    def of(cls, row: dict, data=None) -> PoolReserveForm:
        mib = row["reserve_bytes"] // 2**20 if row["reserve_bytes"] is not None else None
        return cls(data, initial={"reserve_mib": mib,
                                  "reserve_percent": row["reserve_percent"]})

    def values(self) -> dict:
        mib = self.cleaned_data.get("reserve_mib")
        return {"reserve_bytes": mib * 2**20 if mib is not None else None,
                "reserve_percent": self.cleaned_data.get("reserve_percent")}
