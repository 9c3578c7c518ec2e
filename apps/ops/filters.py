"""Query-string filters of the operations list, and the id filter every list shares.

Filters are parsed and validated by django-filter, so `?host=abc` or a NUL byte
in `?kind=` is a 400 naming the field instead of reaching the database.
"""

from __future__ import annotations

import django_filters
from django import forms
from drf_spectacular.utils import extend_schema_field

from apps.ops.models import Operation

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


class OperationFilter(HostListFilter):
    """The filters of the operations list, in the API and (OperationPageFilter) on its page."""

    status = EnumFilter(choices=Operation.Status.choices)
    kind = django_filters.CharFilter(max_length=64, help_text="e.g. fleet.discover")
    trigger = EnumFilter(choices=Operation.Trigger.choices,
                         help_text="how it was started: from the UI, the API, a schedule, "
                                   "or by the system")
    user = django_filters.CharFilter(field_name="triggered_by__username", max_length=150,
                                     help_text="only those started by the user with this name")

    class Meta:
        model = Operation
        fields = ["host", "status", "kind", "trigger", "user"]


TRIGGER_WORDS = {"ui": "the web UI", "api": "the API", "schedule": "a schedule",
                 "system": "the system"}


class OperationPageFilter(OperationFilter):
    """The same filters as a GET form above /operations/, each a list to choose from.

    A form sends every field, the unused ones empty, so the page drops empty
    values before filtering (`given`): there, empty means "any".
    """

    LABELS = {"host": ("Host", "any host"), "kind": ("Kind", "any kind"),
              "status": ("Status", "any status"), "trigger": ("Started from", "anywhere"),
              "user": ("Started by", "anyone")}

    def __init__(self, data=None, *args, **kwargs) -> None:
        super().__init__(given(data), *args, **kwargs)
        # On this form's own fields: the declared filters (and the fields they
        # cache) are shared with the API's filters.
        for name, choices in self._choices().items():
            field = self.form.fields[name]
            field.label, anything = self.LABELS[name]
            field.help_text = ""  # the choices say what is possible
            choices = [("", anything), *choices]
            if isinstance(field, forms.ChoiceField):
                field.choices = choices
            else:
                field.widget = forms.Select(choices=choices)

    @staticmethod
    def _choices() -> dict[str, list[tuple[object, str]]]:
        from django.contrib.auth import get_user_model

        from apps.fleet.models import Host
        from apps.ops.engine import KINDS

        users = get_user_model().objects.order_by("username").values_list("username", flat=True)
        return {"host": list(Host.objects.order_by("name").values_list("pk", "name")),
                "kind": [(kind, kind) for kind in sorted(KINDS)],
                "status": Operation.Status.choices,
                "trigger": [(value, TRIGGER_WORDS[value]) for value in Operation.Trigger.values],
                "user": [(name, name) for name in users]}


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
