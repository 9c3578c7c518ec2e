"""Telemetry driven by a real `celery beat` and the collector's own worker: samples
of a real test host accumulate without the test calling the collector, the
collect task runs only on the `telemetry` queue's worker, and the API reads the
host's TPS and ARC hit rate from them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.ops.models import Operation
from apps.ops.schedule import ensure_periodic_tasks
from apps.telemetry.models import RawSample
from tests.driving import drive
from tests.integration.conftest import register
from tests.integration.test_telemetry import pgbench
from tests.waiting import wait_until
from tests.workers import Beat, Worker

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

INTERVAL = "5"  # POZOL_TELEMETRY_INTERVAL's minimum


def test_beat_samples_the_host_on_the_collector_worker_and_the_api_reads_it(
        fleet_hosts, settings, tmp_path, api):
    fleet_host = fleet_hosts[0]
    env = {"POZOL_TELEMETRY_INTERVAL": INTERVAL}
    worker = Worker("pozol", "tele-default", tmp_path, **env)  # must never collect
    collector = Worker("pozol", "tele-collector", tmp_path, queues="telemetry", concurrency=1,
                       **env)
    beat = None
    try:
        host = register(fleet_host, name="sampled")
        # Discovery in this process: what is proven here is the telemetry queue.
        discovery = drive(host.operations.get())
        assert discovery.status == Operation.Status.SUCCEEDED, discovery.error
        settings.POZOL = {**settings.POZOL, "TELEMETRY_INTERVAL": int(INTERVAL)}
        ensure_periodic_tasks()

        beat = Beat("pozol", "telemetry", tmp_path, **env)
        assert wait_until(lambda: RawSample.objects.filter(host=host).count() >= 2, 60, 1), (
            beat.output()[-3000:], collector.output()[-3000:])
        pgbench(fleet_host)
        count = RawSample.objects.filter(host=host).count()
        assert wait_until(lambda: RawSample.objects.filter(host=host).count() > count, 30, 1)

        assert "Task telemetry.collect[" in collector.output()
        assert "Task telemetry.collect[" not in worker.output()  # its banner lists it
        now = timezone.now()
        window = {"from": (now - timedelta(minutes=5)).isoformat(), "to": now.isoformat()}
        for metric in ("tps", "arc_hit_rate"):
            body = api.get(f"/api/hosts/{host.pk}/telemetry/", {**window, "metric": metric})
            assert body.status_code == 200
            values = [p["v"] for s in body.json()["series"] for p in s["points"]]
            assert any(v is not None for v in values), (metric, body.json())
        tps = api.get(f"/api/hosts/{host.pk}/telemetry/", {**window, "metric": "tps"}).json()
        assert max(p["v"] or 0 for p in tps["series"][0]["points"]) > 10  # pgbench's load
    finally:
        if beat:
            beat.stop()
        collector.stop()
        worker.stop()
