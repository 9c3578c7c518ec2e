"""The query-string filters every list of the API and its pages shares.

Filters are parsed and validated by django-filter, so `?host=abc` or a NUL byte
in `?kind=` is a 400 naming the field instead of reaching the database.
"""


from __future__ import annotations

import django_filters
from django import forms
from drf_spectacular.utils import extend_schema_field

# The largest id PostgreSQL's bigint holds; a larger one is bad input, not a miss.
MAX_ID = 2**63 - 1


class GivenOrAbsent:
    """A parameter is left out or has a value: `?host=` is refused, not read as absent.

    The schema types these parameters (an integer, one of an enum), and an
    empty string is neither; a client sending one has a bug worth hearing about.
    """

    def clean(self, value):
        if value == "":
            raise forms.ValidationError("give a value, or leave the parameter out")
        return super().clean(value)


class _IdField(GivenOrAbsent, forms.IntegerField):
    pass


class _ChoiceField(GivenOrAbsent, forms.ChoiceField):
    pass


class _TrueFalseField(GivenOrAbsent, forms.TypedChoiceField):
    pass


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_ID})
class IdFilter(django_filters.NumberFilter):
    """A whole-number id: `1.5`, `abc`, `true` or an id past bigint are refused."""

    field_class = _IdField

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


@extend_schema_field({"type": "boolean"})
class TrueFalseFilter(django_filters.TypedChoiceFilter):
    """`true` or `false`, nothing else (django-filter's BooleanFilter reads `null` as unset)."""

    field_class = _TrueFalseField

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("choices", [("true", "true"), ("false", "false")])
        kwargs.setdefault("coerce", lambda value: value == "true")
        super().__init__(*args, **kwargs)


class EnumFilter(django_filters.ChoiceFilter):
    """One of the choices; an empty value is refused like any other that is not one."""

    field_class = _ChoiceField


class HostListFilter(django_filters.FilterSet):
    """`?host=<id>`: the filter of every list of things that belong to a host."""

    host = IdFilter(field_name="host_id", help_text="only those of the host with this id")


def given(data):
    """The query without its empty values (a form's unused fields) and its page number."""
    if data is None:
        return None
    kept = data.copy()
    for name in list(kept):
        values = [value for value in kept.getlist(name) if value != ""]
        if name == "page" or not values:
            del kept[name]
        else:
            kept.setlist(name, values)
    return kept
