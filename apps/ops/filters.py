"""Query-string filters of the operations list, on its API and on its page."""

from __future__ import annotations

import django_filters
from django import forms

from apps.api.filters import MAX_ID, EnumFilter, HostListFilter, given
from apps.ops.models import Operation


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
    """The same filters as a GET form above /operations/, each a list to choose from,
    but the host: a fleet of thousands is no list to scroll, and listing it would
    make the page grow with the fleet. The host is typed by name (`host_name`);
    `?host=<id>`, what other pages link to, is shown as that name.

    A form sends every field, the unused ones empty, so the page drops empty
    values before filtering (`given`): there, empty means "any".
    """

    host_name = django_filters.CharFilter(method="of_host_named", max_length=255, label="Host")

    LABELS = {"kind": ("Kind", "any kind"), "status": ("Status", "any status"),
              "trigger": ("Started from", "anywhere"), "user": ("Started by", "anyone")}

    class Meta(OperationFilter.Meta):
        fields = ["host_name", "host", "status", "kind", "trigger", "user"]

    def __init__(self, data=None, *args, **kwargs) -> None:
        super().__init__(self._named(given(data)), *args, **kwargs)
        # On this form's own fields: the declared filters (and the fields they
        # cache) are shared with the API's filters.
        self.form.fields["host"].widget = forms.HiddenInput()
        name = self.form.fields["host_name"]
        name.help_text = ""
        name.widget.attrs.update(placeholder="any host", autocomplete="off")
        for field_name, choices in self._choices().items():
            field = self.form.fields[field_name]
            field.label, anything = self.LABELS[field_name]
            field.help_text = ""  # the choices say what is possible
            choices = [("", anything), *choices]
            if isinstance(field, forms.ChoiceField):
                field.choices = choices
            else:
                field.widget = forms.Select(choices=choices)

    def of_host_named(self, queryset, name: str, value: str):
        """The host's id first, then its operations by (host, created_at): joined by
        name, PostgreSQL read every operation of the host (a year of them) to sort."""
        host_id = self._host_model().objects.filter(name=value).values_list("pk", flat=True)
        host_id = host_id.first()
        return queryset.filter(host_id=host_id) if host_id else queryset.none()

    @staticmethod
    def _host_model():
        # The host model by the foreign key: ops sits below fleet and imports none of it.
        return Operation._meta.get_field("host").related_model

    @classmethod
    def _named(cls, data):
        """`?host=<id>` of a known host as `host_name`, so the form shows (and sends
        back) the name the operator can edit; a bad or unknown id stays, to be refused
        or to match nothing."""
        raw = data.get("host") if data is not None else None
        if not raw or data.get("host_name") or not (raw.isascii() and raw.isdecimal()):
            return data
        name = (cls._host_model().objects.filter(pk=min(int(raw), MAX_ID))
                .values_list("name", flat=True))
        if name := name.first():
            data = data.copy()
            del data["host"]
            data["host_name"] = name
        return data

    @staticmethod
    def _choices() -> dict[str, list[tuple[object, str]]]:
        from django.contrib.auth import get_user_model

        from apps.ops.engine import KINDS

        users = get_user_model().objects.order_by("username").values_list("username", flat=True)
        return {"kind": [(kind, kind) for kind in sorted(KINDS)],
                "status": Operation.Status.choices,
                "trigger": [(value, TRIGGER_WORDS[value]) for value in Operation.Trigger.values],
                "user": [(name, name) for name in users]}
