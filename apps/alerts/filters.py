import django_filters

from apps.alerts.models import Alert, Delivery
from apps.api.filters import EnumFilter, HostListFilter, IdFilter, TrueFalseFilter
from apps.common import alert_kinds


class AlertFilter(HostListFilter):
    kind = EnumFilter(choices=alert_kinds.Choices(titles=False))
    open = TrueFalseFilter(field_name="resolved_at", lookup_expr="isnull",
                           help_text="true: only open alerts; false: only resolved ones")

    class Meta:
        model = Alert
        fields = ["host", "kind", "open"]


class DeliveryFilter(django_filters.FilterSet):
    alert = IdFilter(field_name="alert_id")
    channel = IdFilter(field_name="channel_id")
    status = EnumFilter(choices=Delivery.Status.choices)
    event = EnumFilter(choices=Delivery.Event.choices)

    class Meta:
        model = Delivery
        fields = ["alert", "channel", "status", "event"]
