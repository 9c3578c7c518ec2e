from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.response import Response

from apps.fleet.models import Host
from apps.telemetry import services
from apps.telemetry.serializers import TelemetryQuerySerializer, TelemetryReadingSerializer


class HostTelemetryView(generics.GenericAPIView):
    """One metric of one host over a window: raw points up to 48 hours, 5-minute
    buckets up to 30 days, hourly ones beyond (the retention settings decide).
    Rates (ARC hit rate, TPS, WAL) are made from raw counters when read; an unknown
    point is null, and a metric the host does not have is `available: false` with
    the reason, never zeros."""

    serializer_class = TelemetryReadingSerializer

    @extend_schema(parameters=[TelemetryQuerySerializer],
                   responses={200: TelemetryReadingSerializer})
    def get(self, request, pk: int) -> Response:
        host = get_object_or_404(Host.objects.only("pk"), pk=pk)
        query = TelemetryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        reading = services.read(host, data["metric"], data.get("from"), data.get("to"))
        return Response(TelemetryReadingSerializer(reading, context={"host": host}).data)
