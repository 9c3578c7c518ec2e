import django_filters

from apps.api.filters import EnumFilter, IdFilter
from apps.common import events as registry
from apps.events.models import Delivery, Event


class EventFilter(django_filters.FilterSet):
    kind = EnumFilter(choices=registry.Choices())

    class Meta:
        model = Event
        fields = ["kind"]


class DeliveryFilter(django_filters.FilterSet):
    subscription = IdFilter(field_name="subscription_id")
    status = EnumFilter(choices=Delivery.Status.choices)
    event = django_filters.UUIDFilter(field_name="event_id")

    class Meta:
        model = Delivery
        fields = ["subscription", "status", "event"]
