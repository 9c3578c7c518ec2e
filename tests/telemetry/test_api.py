"""GET /api/hosts/{id}/telemetry/ through a real token."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.telemetry.models import RawSample
from tests.telemetry.test_services import pinned

pytestmark = pytest.mark.django_db

URL = "/api/hosts/{}/telemetry/"


def _window(minutes: int = 10) -> tuple[str, str]:
    start = timezone.now().replace(microsecond=0) - timedelta(hours=1)
    return start.isoformat(), (start + timedelta(minutes=minutes)).isoformat()


def _rows(host, start: str, count: int = 3) -> None:
    from datetime import datetime

    t0 = datetime.fromisoformat(start)
    for minute in range(count):
        RawSample.objects.create(host=host, taken_at=t0 + timedelta(minutes=minute), values={
            "uptime": 500 + 60 * minute, "arc": {"hits": 90 * minute, "misses": 10 * minute,
                                                 "size": 4096}})


def test_points_at_raw_resolution(api):
    host = pinned()
    start, end = _window()
    _rows(host, start)
    answer = api.get(URL.format(host.pk), {"metric": "arc_hit_rate", "from": start, "to": end})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["resolution"] == "raw" and body["available"] is True and body["unit"] == "ratio"
    [series] = body["series"]
    assert series["key"] is None
    assert len(series["points"]) == 2 and all(p["t"].endswith("Z") for p in series["points"])
    assert all(p["v"] == pytest.approx(0.9) for p in series["points"])


def test_a_metric_the_host_does_not_have_is_null_with_a_reason(api):
    host = pinned()
    start, end = _window()
    _rows(host, start)
    body = api.get(URL.format(host.pk), {"metric": "tps", "from": start, "to": end}).json()
    assert body["available"] is False and body["series"] == []
    assert body["reason"]  # "no sample taken yet": the collector never ran here


@pytest.mark.parametrize("query", [
    {}, {"metric": "load"}, {"metric": "tps", "from": "yesterday"},
    {"metric": "tps", "from": "0001-01-01T00:00:00Z"},
    {"metric": "tps", "from": "2026-11-23T12:00:00Z", "to": "2026-11-23T11:00:00Z"},
])
def test_bad_queries_are_400_with_the_field(api, query):
    host = pinned()
    answer = api.get(URL.format(host.pk), query)
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["fields"]


def test_an_unknown_metric_is_answered_with_the_valid_names(api):
    answer = api.get(URL.format(pinned().pk), {"metric": "arc_hit_ratio"})
    assert answer.status_code == 400
    [message] = answer.json()["error"]["fields"]["metric"]
    assert message.startswith('"arc_hit_ratio" is not a metric; the metrics are: ')
    assert all(name in message for name in ("arc_hit_rate", "tps", "xid_age"))


def test_unknown_host_is_404(api):
    assert api.get(URL.format(999999), {"metric": "tps"}).status_code == 404


def test_in_the_schema(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/hosts/{id}/telemetry/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"metric", "from", "to"}
