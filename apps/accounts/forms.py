"""The tokens page's form: each field in its type; the services decide the rest."""

from __future__ import annotations

from django import forms


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, label="Token name",
                           help_text="What it is for, e.g. CI.")
    expires_in_days = forms.IntegerField(
        min_value=1, max_value=3650, required=False, label="Expires after (days)",
        help_text="Leave empty for a token that never expires.")
