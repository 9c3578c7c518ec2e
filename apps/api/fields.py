"""Serializer fields that take JSON's types as they are.

DRF's fields coerce: the string "5" passes as the integer 5, 1 as true, the
number 0 as the text "0". The API speaks JSON only, where those are different
values, and its schema says which type each field has; taking another type
silently hides client bugs (and the fuzzer rightly reports it). These fields
refuse anything but their own JSON type, and `ModelSerializer` uses them for
the model fields it maps.
"""

from __future__ import annotations

from django.db import models
from rest_framework import serializers

from apps.common.numbers import is_number, is_whole

# Trimmed silently, these would save another value than the one sent ('acme\n' as
# 'acme'): a line break or tab at either end is refused; spaces are still forgiven.
CONTROL_WHITESPACE = "\t\n\v\f\r\x1c\x1d\x1e\x1f\x85\u2028\u2029"


class StrictCharField(serializers.CharField):
    default_error_messages = {
        "edge_control": "No line break or tab at the start or the end.",
    }

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        # DRF trims whitespace before it checks the length, so a value longer
        # than the schema's maxLength passed when it ended in spaces.
        if self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        if self.trim_whitespace and _control_at_an_end(data):
            self.fail("edge_control")
        return super().to_internal_value(data)


class StrictTextField(StrictCharField):
    """Free text (a note, a description): a trailing newline is part of typing it."""

    def to_internal_value(self, data):
        if isinstance(data, str) and self.trim_whitespace and _control_at_an_end(data):
            data = data.strip()
        return super().to_internal_value(data)


def _control_at_an_end(text: str) -> bool:
    edges = text[:len(text) - len(text.lstrip())] + text[len(text.rstrip()):]
    return any(char in CONTROL_WHITESPACE for char in edges)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if not is_whole(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data):
        if not is_number(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictPrimaryKeyRelatedField(serializers.PrimaryKeyRelatedField):
    def to_internal_value(self, data):
        if not is_whole(data):
            self.fail("incorrect_type", data_type=type(data).__name__)
        return super().to_internal_value(data)


class ModelSerializer(serializers.ModelSerializer):
    """DRF's ModelSerializer with the strict fields above for the model's fields."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: StrictCharField,
        models.TextField: StrictTextField,
        models.BooleanField: StrictBooleanField,
        models.IntegerField: StrictIntegerField,
        models.PositiveIntegerField: StrictIntegerField,
        models.PositiveSmallIntegerField: StrictIntegerField,
        models.FloatField: StrictFloatField,
    }
    serializer_related_field = StrictPrimaryKeyRelatedField
