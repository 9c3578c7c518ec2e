"""/metrics: the Prometheus text format, what it carries, and who may scrape it."""

from __future__ import annotations

import ipaddress
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from apps.ops import timing
from apps.ops.models import Operation
from apps.replication.models import ReplicationLink
from apps.snapshots.models import Snapshot
from apps.telemetry.models import HostTelemetry
from tests.telemetry.test_services import _record_captured, pinned

pytestmark = pytest.mark.django_db

TOKEN = "scrape-token-for-tests-0123456789"
DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "pozol-fleet.json"


@pytest.fixture
def scrape(settings, client):
    """GET /metrics with the token (or as given), its samples by (name, labels) when 200."""
    settings.POZOL = {**settings.POZOL, "METRICS_TOKEN": TOKEN, "METRICS_ALLOWED_CIDRS": []}

    def get(**headers):
        headers.setdefault("HTTP_AUTHORIZATION", f"Bearer {TOKEN}")
        return client.get("/metrics", **headers)
    return get


def samples(answer) -> dict[tuple[str, frozenset], float]:
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"].startswith("text/plain; version=")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(answer.content.decode())
            for s in family.samples}


def value(found: dict, name: str, **labels) -> float:
    return found[(name, frozenset(labels.items()))]


def test_a_host_s_two_samples_are_its_current_values_with_rates(scrape):
    host = pinned("db1")
    _record_captured(host)
    last = HostTelemetry.objects.get(host=host).last_sample

    found = samples(scrape())

    assert value(found, "pozol_host_reachable", host="db1") == 1
    assert 0 <= value(found, "pozol_host_arc_hit_ratio", host="db1") <= 1
    assert value(found, "pozol_host_arc_size_bytes", host="db1") == last["arc"]["size"]
    assert value(found, "pozol_host_dirty_bytes", host="db1") == last["memory"]["dirty"]
    assert value(found, "pozol_host_tps", host="db1") > 0
    assert 0 <= value(found, "pozol_host_cache_hit_ratio", host="db1") <= 1
    [pool] = last["pools"]
    labels = {"host": "db1", "pool": pool["name"]}
    assert value(found, "pozol_pool_capacity_ratio", **labels) == pool["capacity"] / 100
    assert value(found, "pozol_pool_healthy", **labels) == 1
    assert value(found, "pozol_pool_health", **labels, state="ONLINE") == 1
    for dataset in last["datasets"]:
        assert value(found, "pozol_dataset_compressratio", host="db1",
                     dataset=dataset["name"]) == dataset["compressratio"]
    assert 0 <= value(found, "pozol_host_sample_age_seconds", host="db1") < 60


def test_snapshot_age_replication_lag_operations_and_steps(scrape):
    source, target = pinned("db1"), pinned("db2")
    now = timezone.now()
    Snapshot.objects.create(host=source, dataset="tank/pg", name="a", seen_at=now,
                            created_at=now - timedelta(hours=2))
    Snapshot.objects.create(host=source, dataset="tank/pg", name="b", seen_at=now,
                            created_at=now - timedelta(minutes=30))
    ReplicationLink.objects.create(name="l1", source_host=source, target_host=target,
                                   target_parent="tank/copy", sources=["tank/pg"],
                                   newest_received="a", newest_received_at=now - timedelta(hours=2))
    Operation.objects.create(kind="fleet.discover", step="connect", host=source)
    Operation.objects.create(kind="fleet.discover", step="connect", status="failed")
    timing.client().delete(timing.KEY)
    for seconds in (0.02, 0.3, 0.4, 500):
        timing.record("fleet.discover", "connect", seconds)

    found = samples(scrape())

    assert 1790 < value(found, "pozol_host_newest_snapshot_age_seconds", host="db1") < 1900
    assert 7190 < value(found, "pozol_host_replication_lag_seconds", host="db1") < 7300
    assert value(found, "pozol_operations", status="pending") == 1
    assert value(found, "pozol_operations", status="failed") == 1
    assert value(found, "pozol_operations_active", kind="fleet.discover", status="pending") == 1
    step = {"kind": "fleet.discover", "step": "connect"}
    assert value(found, "pozol_step_duration_seconds_bucket", **step, le="0.05") == 1
    assert value(found, "pozol_step_duration_seconds_bucket", **step, le="0.5") == 3
    assert value(found, "pozol_step_duration_seconds_bucket", **step, le="+Inf") == 4
    assert value(found, "pozol_step_duration_seconds_count", **step) == 4
    assert value(found, "pozol_queue_depth", queue="telemetry") >= 0
    assert value(found, "pozol_redis_up") == 1


def test_labels_stay_host_pool_dataset_whatever_the_snapshots(scrape):
    host = pinned("db1")
    _record_captured(host)
    now = timezone.now()
    Snapshot.objects.bulk_create([Snapshot(host=host, dataset="tank/pg", name=f"s{i}",
                                           seen_at=now, created_at=now) for i in range(50)])
    found = samples(scrape())
    labels = {name for _, labelset in found for name, _ in labelset}
    assert labels <= {"host", "pool", "dataset", "state", "status", "kind", "step", "le",
                      "queue"}
    assert not any("s1" in v for _, labelset in found for _, v in labelset)


def test_a_host_without_samples_still_shows_reachability_and_discovered_pools(scrape):
    host = pinned("quiet")
    host.pools.create(name="tank", health="DEGRADED", capacity=91, size=100, allocated=91)
    found = samples(scrape())
    assert value(found, "pozol_host_reachable", host="quiet") == 1
    assert value(found, "pozol_pool_healthy", host="quiet", pool="tank") == 0
    assert value(found, "pozol_pool_capacity_ratio", host="quiet", pool="tank") == 0.91
    assert ("pozol_host_arc_hit_ratio", frozenset({("host", "quiet")})) not in found


def test_no_token_is_401_a_wrong_one_401_and_an_unconfigured_endpoint_403(scrape, settings):
    missing = scrape(HTTP_AUTHORIZATION="")
    assert missing.status_code == 401 and missing["WWW-Authenticate"].startswith("Bearer")
    assert scrape(HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    assert scrape(HTTP_AUTHORIZATION=f"Token {TOKEN}").status_code == 401
    assert scrape(HTTP_AUTHORIZATION="Bearer " + "x" * 10_000).status_code == 401
    settings.POZOL = {**settings.POZOL, "METRICS_TOKEN": ""}
    off = scrape()
    assert off.status_code == 403 and b"POZOL_METRICS_TOKEN" in off.content


def test_an_allowed_address_needs_no_token_and_another_is_403(scrape, settings, client):
    settings.POZOL = {**settings.POZOL, "METRICS_TOKEN": "",
                      "METRICS_ALLOWED_CIDRS": [ipaddress.ip_network("10.1.0.0/16")]}
    assert scrape(HTTP_AUTHORIZATION="", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert scrape(HTTP_AUTHORIZATION="", REMOTE_ADDR="10.2.0.1").status_code == 403
    assert scrape(HTTP_AUTHORIZATION="", REMOTE_ADDR="::ffff:10.1.0.9").status_code == 200
    assert client.post("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 405


def test_every_metric_the_grafana_dashboard_reads_is_served(scrape):
    host = pinned("db1")
    _record_captured(host)
    Snapshot.objects.create(host=host, dataset="tank/pg", name="a", seen_at=timezone.now(),
                            created_at=timezone.now())
    timing.record("fleet.discover", "connect", 0.1)  # the histogram's series exist
    served = {family.name for family in text_string_to_metric_families(
        scrape().content.decode())} | {name for name, _ in samples(scrape())}
    used = dashboard_metric_names(json.loads(DASHBOARD.read_text()))
    assert used, "the dashboard reads no pozol_ metric"
    assert used - served == set()


def dashboard_metric_names(dashboard: dict) -> set[str]:
    import re

    names = set()
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            names |= set(re.findall(r"\bpozol_[a-z0-9_]+", target["expr"]))
    for variable in dashboard.get("templating", {}).get("list", []):
        names |= set(re.findall(r"\bpozol_[a-z0-9_]+", json.dumps(variable.get("query", ""))))
    return names


def test_redis_away_is_redis_up_0_not_a_500(scrape, settings):
    from tests.remote.sshd import free_port

    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port('127.0.0.1')}/0"  # nobody
    pinned("db1")
    found = samples(scrape())
    assert value(found, "pozol_redis_up") == 0
    assert value(found, "pozol_host_reachable", host="db1") == 1
    assert not any(name == "pozol_queue_depth" for name, _ in found)
