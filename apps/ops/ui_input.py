"""Reading ids that a page posts back: hostile or stale values are a form error (so a
refusal naming the field), never a ValueError deep in the ORM."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from apps.api.filters import MAX_ID

CHOOSE_ONE = "choose one from the list."


class IdField(forms.CharField):
    """The id of a row the page listed: ASCII digits (isdecimal() alone accepts '١٢',
    isdigit() even '²'), in the range of ids."""

    def __init__(self, **kwargs) -> None:
        super().__init__(required=False, strip=False, **kwargs)

    def to_python(self, value: object) -> int:
        raw = super().to_python(value)
        if not (raw.isascii() and raw.isdecimal()) or not 0 < int(raw) <= MAX_ID:
            raise ValidationError(CHOOSE_ONE, code="invalid_id")
        return int(raw)
