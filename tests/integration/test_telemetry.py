"""Telemetry on a real test host: the collect task twice, pgbench between, read by the API
and by /metrics."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from apps.remote import ssh
from apps.telemetry import tasks
from apps.telemetry.models import HostTelemetry, RawSample
from tests.integration.conftest import run_on
from tests.integration.test_snapshots import discovered

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def pgbench(fleet_host, seconds: int = 3) -> None:
    run_on(fleet_host, f"cd / && runuser -u {fleet_host.pg_os_user} -- "
                       f"{fleet_host.pg_bin_dir}/pgbench -h {fleet_host.pg_socket_dir} "
                       f"-p {fleet_host.pg_port} -c 2 -j 1 -T {seconds} {fleet_host.pg_database}")


def read(api, host, metric: str) -> dict:
    now = timezone.now()
    answer = api.get(f"/api/hosts/{host.pk}/telemetry/", {
        "metric": metric, "from": (now - timedelta(minutes=10)).isoformat(),
        "to": (now + timedelta(minutes=1)).isoformat()})
    assert answer.status_code == 200, answer.content
    return answer.json()


def scraped(client, settings) -> dict[tuple[str, frozenset], float]:
    """/metrics as a Prometheus server reads it (the scrape token, the real parser)."""
    settings.POZOL = {**settings.POZOL, "METRICS_TOKEN": "integration-scrape-token"}
    answer = client.get("/metrics", HTTP_AUTHORIZATION="Bearer integration-scrape-token")
    assert answer.status_code == 200, answer.content
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(answer.content.decode())
            for s in family.samples}


def test_two_collections_around_pgbench_read_tps_and_arc_hit_rate_through_the_api(
        fleet_hosts, api, client, settings):
    fleet_host = fleet_hosts[0]
    host = discovered(fleet_host)

    assert tasks.collect() == 1
    pgbench(fleet_host)
    ssh.close_all()  # the pooled connection dropped: the collector reconnects, pinned
    assert tasks.collect() == 1

    assert RawSample.objects.filter(host=host).count() == 2
    state = HostTelemetry.objects.get(host=host)
    assert state.last_error == "" and state.last_duration > 0
    tps = read(api, host, "tps")
    [cluster] = tps["series"]
    [point] = cluster["points"]
    assert tps["available"] and point["v"] > 0
    arc = read(api, host, "arc_hit_rate")
    [point] = arc["series"][0]["points"]
    assert arc["available"] and 0 <= point["v"] <= 1
    capacity = read(api, host, "pool_capacity")
    assert {s["key"] for s in capacity["series"]} == set(fleet_host.pools)

    metrics = scraped(client, settings)  # the same samples, as Prometheus sees them
    of_host = frozenset({("host", host.name)})
    assert metrics[("pozol_host_reachable", of_host)] == 1
    assert metrics[("pozol_host_tps", of_host)] > 0
    assert 0 <= metrics[("pozol_host_arc_hit_ratio", of_host)] <= 1
    assert metrics[("pozol_host_arc_size_bytes", of_host)] > 0
    for pool in fleet_host.pools:
        labels = frozenset({("host", host.name), ("pool", pool)})
        assert 0 <= metrics[("pozol_pool_capacity_ratio", labels)] <= 1
        assert metrics[("pozol_pool_healthy", labels)] == 1


def test_a_host_that_stops_answering_is_recorded_and_the_round_goes_on(fleet_hosts):
    up, down = (discovered(fleet_host) for fleet_host in fleet_hosts)
    port = down.port
    type(down).objects.filter(pk=down.pk).update(port=1)  # nothing listens there
    ssh.close_all()

    assert tasks.collect() == 1

    assert RawSample.objects.filter(host=up).count() == 1
    state = HostTelemetry.objects.get(host=down)
    assert state.last_error_code == "unreachable" and state.last_error_at is not None
    # The outage is an alert from this sample on, not from the next discovery...
    down.refresh_from_db()
    [alert] = down.alerts.filter(kind="unreachable", resolved_at=None)
    assert not down.reachable and "could not be reached" in alert.message

    # ...and the first sample that answers again ends it.
    type(down).objects.filter(pk=down.pk).update(port=port)
    ssh.close_all()
    assert tasks.collect() == 2
    down.refresh_from_db()
    alert.refresh_from_db()
    assert down.reachable and alert.resolved_at is not None
    assert RawSample.objects.filter(host=down).count() == 1
