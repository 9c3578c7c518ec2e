"""The telemetry read API's query and answer."""

from __future__ import annotations

from datetime import UTC, datetime

from rest_framework import serializers

from apps.telemetry.core.metrics import METRICS

# Far enough for any graph, near enough that `from - interval` never overflows.
EARLIEST, LATEST = datetime(2000, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC)


class _Moment(serializers.DateTimeField):
    def to_internal_value(self, value):
        moment = super().to_internal_value(value)
        if not EARLIEST <= moment <= LATEST:
            raise serializers.ValidationError("between 2000-01-01 and 9000-01-01")
        return moment


class TelemetryQuerySerializer(serializers.Serializer):
    metric = serializers.ChoiceField(
        choices=sorted(METRICS), help_text="what to read",
        # A wrong name is answered with the right ones, not just "not a valid choice".
        error_messages={"invalid_choice": '"{input}" is not a metric; the metrics are: '
                                          + ", ".join(sorted(METRICS))})
    to = _Moment(required=False, help_text="end of the window (default: now)")

    def get_fields(self):
        fields = super().get_fields()  # `from` is a Python keyword: added by name
        fields["from"] = _Moment(required=False,
                                 help_text="start of the window (default: an hour before `to`)")
        return fields


class TelemetryPointSerializer(serializers.Serializer):
    t = serializers.DateTimeField(help_text="the sample's time, or the bucket's start")
    v = serializers.FloatField(allow_null=True, help_text="null: not known (draw a gap)")


class TelemetrySeriesSerializer(serializers.Serializer):
    key = serializers.CharField(allow_null=True, help_text="the pool, dataset or cluster "
                                "(data directory) of a per-key metric; null otherwise")
    points = TelemetryPointSerializer(many=True)


class TelemetryReadingSerializer(serializers.Serializer):
    """Built by hand below: a 48-hour graph is 2,880 points, too many for field objects."""

    host = serializers.IntegerField()
    metric = serializers.CharField()
    unit = serializers.CharField()
    description = serializers.CharField()
    resolution = serializers.ChoiceField(choices=["raw", "5m", "1h"], help_text="raw up to "
                                         "the raw retention (48 h), 5-minute buckets up to "
                                         "30 days, hourly beyond")
    to = serializers.DateTimeField()
    available = serializers.BooleanField(help_text="false: nothing to show; `reason` says why")
    reason = serializers.CharField(allow_null=True, help_text="e.g. 'not available on this "
                                   "host'; null when there are values")
    series = TelemetrySeriesSerializer(many=True)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField()
        return fields

    def to_representation(self, reading):
        return {
            "host": self.context["host"].pk, "metric": reading.metric.name,
            "unit": reading.metric.unit, "description": reading.metric.description,
            "resolution": reading.resolution, "from": _iso(reading.start),
            "to": _iso(reading.end), "available": reading.reason is None,
            "reason": reading.reason,
            "series": [{"key": s.key, "points": [{"t": _iso(at), "v": v} for at, v in s.points]}
                       for s in reading.series],
        }


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
