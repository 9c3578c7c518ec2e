import django_filters
from django import forms

from apps.api.filters import EnumFilter, GivenOrAbsent, IdFilter
from apps.common import events as registry
from apps.events.models import Delivery, Event


class _UUIDField(GivenOrAbsent, forms.UUIDField):
    pass


class UUIDFilter(django_filters.UUIDFilter):
    """An event id; `?event=` (empty) is refused like any value that is not one."""

    field_class = _UUIDField


class EventFilter(django_filters.FilterSet):
    kind = EnumFilter(choices=registry.Choices())

    class Meta:
        model = Event
        fields = ["kind"]


class DeliveryFilter(django_filters.FilterSet):
    subscription = IdFilter(field_name="subscription_id")
    status = EnumFilter(choices=Delivery.Status.choices)
    event = UUIDFilter(field_name="event_id")

    class Meta:
        model = Delivery
        fields = ["subscription", "status", "event"]
