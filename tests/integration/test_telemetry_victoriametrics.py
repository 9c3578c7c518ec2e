"""Telemetry kept in a real VictoriaMetrics (POZOL_TELEMETRY_STORE=victoriametrics):
collector rounds on a real test host write there, the host page's charts and the API
read their series back from it; a VictoriaMetrics that is down loses the round's
history (logged) but not the round, and a chart answers 503 with why."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
import requests
from django.utils import timezone

from apps.telemetry import services, tasks
from apps.telemetry.models import HostTelemetry, RawSample, Rollup
from tests.integration.test_snapshots import discovered
from tests.integration.test_telemetry import pgbench
from tests.telemetry.victoriametrics import victoriametrics  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

UNAVAILABLE = ("The telemetry store (VictoriaMetrics) did not answer: no history can be drawn "
               "until it does. Current values are not affected.")


def chart(client, host, chart_id: str, range_name: str = "1h") -> tuple[int, dict]:
    answer = client.get(f"/telemetry/hosts/{host.pk}/charts/{chart_id}/",
                        {"range": range_name})
    return answer.status_code, answer.json()


def exported(server, host) -> dict[str, list[float]]:
    """Every series of the host as VictoriaMetrics holds it (its export API)."""
    answer = requests.get(f"{server.url}/api/v1/export",
                          params={"match[]": f'{{host_id="{host.pk}"}}',
                                  "end": f"{timezone.now().timestamp() + 60:.0f}"}, timeout=10)
    answer.raise_for_status()
    import json

    found = {}
    for line in answer.text.splitlines():
        row = json.loads(line)
        labels = row["metric"]
        found[labels["__name__"] + "/" + labels.get("key", "")] = row["values"]
    return found


def test_rounds_on_a_real_host_are_read_back_by_the_charts_and_the_api(
        fleet_hosts, victoriametrics, signed_in, api):  # noqa: F811
    fleet_host = fleet_hosts[0]
    host = discovered(fleet_host)

    assert tasks.collect() == 1
    pgbench(fleet_host)
    assert tasks.collect() == 1
    victoriametrics.flush()

    state = HostTelemetry.objects.get(host=host)
    last = state.last_sample
    pools = {pool["name"]: pool["capacity"] for pool in last["pools"]}
    held = exported(victoriametrics, host)
    assert held["pozol_telemetry_pool_capacity/" + "tank"] == [pools["tank"]] * 2
    [tps_key] = [k for k in held if k.startswith("pozol_telemetry_tps/")]
    assert len(held[tps_key]) == 1 and held[tps_key][0] > 0  # a rate from the second on

    status, capacity = chart(signed_in, host, "capacity")
    assert status == 200, capacity
    assert {s["label"] for s in capacity["series"]} == set(pools) == set(fleet_host.pools)
    for line in capacity["series"]:
        assert {v for v in line["values"] if v is not None} == {pools[line["label"]]}
    assert capacity["resolution"] == "raw" and not capacity["missing"]
    status, week = chart(signed_in, host, "capacity", "7d")  # hourly steps: their average
    assert status == 200 and week["resolution"] == "1h"
    for line in week["series"]:
        assert {v for v in line["values"] if v is not None} == {pools[line["label"]]}

    status, arc_size = chart(signed_in, host, "arc-size")
    assert status == 200
    [size] = [s for s in arc_size["series"] if s["label"] == "ARC size"]
    sizes = held["pozol_telemetry_arc_size/"]
    drawn = [v for v in size["values"] if v is not None]
    # The two samples fall in one minute's step (drawn as their average) or in two.
    assert drawn in ([pytest.approx(sum(sizes) / 2)], [pytest.approx(v) for v in sizes])

    now = timezone.now()
    tps = api.get(f"/api/hosts/{host.pk}/telemetry/", {
        "metric": "tps", "from": (now - timedelta(minutes=10)).isoformat(),
        "to": now.isoformat()})
    assert tps.status_code == 200, tps.content
    body = tps.json()
    [cluster] = body["series"]
    assert body["available"] and [p["v"] for p in cluster["points"] if p["v"] is not None] == [
        pytest.approx(held[tps_key][0])]

    # The database keeps the tail /metrics and alerts read; upkeep makes no rollups.
    assert RawSample.objects.filter(host=host).count() == 2
    services.maintain(now + timedelta(hours=1))
    assert not RawSample.objects.exists() and not Rollup.objects.exists()


def test_a_store_that_is_down_loses_the_round_s_history_not_the_round_and_charts_say_why(
        fleet_hosts, victoriametrics, signed_in, api, caplog):  # noqa: F811
    host = discovered(fleet_hosts[0])
    victoriametrics.stop()

    with caplog.at_level(logging.ERROR, logger="pozol.telemetry"):
        assert tasks.collect() == 1
    state = HostTelemetry.objects.get(host=host)
    assert state.last_error == "" and state.last_sample is not None  # the round went on
    [logged] = [r.getMessage() for r in caplog.records if "VictoriaMetrics" in r.getMessage()]
    assert logged.startswith("telemetry: VictoriaMetrics did not take this round's samples "
                             "of 1 hosts") and "1 rounds wait" in logged

    status, body = chart(signed_in, host, "capacity")
    assert status == 503 and body["code"] == "telemetry_store_unavailable"
    assert body["detail"] == UNAVAILABLE
    answer = api.get(f"/api/hosts/{host.pk}/telemetry/", {"metric": "pool_capacity"})
    assert answer.status_code == 503
    assert answer.json()["error"] == {"code": "telemetry_store_unavailable",
                                      "message": UNAVAILABLE, "fields": None}

    victoriametrics.start()  # back: the next round is kept with the one it missed
    assert tasks.collect() == 1
    victoriametrics.flush()
    assert len(exported(victoriametrics, host)["pozol_telemetry_pool_capacity/tank"]) == 2
    status, body = chart(signed_in, host, "capacity")
    assert status == 200 and any(v is not None for s in body["series"] for v in s["values"])
