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


def test_rates_are_the_ones_the_collector_stored_as_the_overview_shows(scrape):
    host = pinned("db1")
    _record_captured(host)
    state = HostTelemetry.objects.get(host=host)
    assert None not in (state.arc_hit_rate, state.tps, state.cache_hit_rate)

    found = samples(scrape())

    assert value(found, "pozol_host_arc_hit_ratio", host="db1") == state.arc_hit_rate
    assert value(found, "pozol_host_tps", host="db1") == state.tps
    assert value(found, "pozol_host_cache_hit_ratio", host="db1") == state.cache_hit_rate
    HostTelemetry.objects.filter(host=host).update(arc_hit_rate=None, tps=None,
                                                   cache_hit_rate=None)
    after_a_gap = samples(scrape())
    assert ("pozol_host_tps", frozenset({"host": "db1"}.items())) not in after_a_gap
    assert ("pozol_host_arc_hit_ratio", frozenset({"host": "db1"}.items())) not in after_a_gap
    assert value(after_a_gap, "pozol_host_arc_size_bytes", host="db1") > 0


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


# -- shards ----------------------------------------------------------------------------

CONTROL_PLANE = {"pozol_operations", "pozol_operations_active", "pozol_queue_depth",
                 "pozol_redis_up", "pozol_step_duration_seconds_bucket",
                 "pozol_step_duration_seconds_count", "pozol_step_duration_seconds_sum"}


def test_shards_split_the_hosts_each_into_exactly_one_and_the_control_plane_on_0(scrape):
    hosts = [pinned(f"db{i}") for i in range(7)]
    for host in hosts[:2]:
        _record_captured(host)
    for host in hosts[2:]:
        host.pools.create(name="tank", health="ONLINE", capacity=50, size=100, allocated=50)
    ReplicationLink.objects.create(name="l1", source_host=hosts[3], target_host=hosts[4],
                                   target_parent="tank/copy", sources=["tank/pg"])
    Operation.objects.create(kind="fleet.discover", step="connect", host=hosts[0])
    timing.record("fleet.discover", "connect", 0.1)
    whole = set(samples(scrape()))
    assert {name for name, _ in whole} >= {"pozol_host_tps", "pozol_pool_healthy",
                                           "pozol_host_replication_lag_seconds",
                                           "pozol_operations", "pozol_redis_up"}

    for count in (2, 3, 8):
        shards = [set(samples(scrape_shard(scrape, index, count))) for index in range(count)]
        assert set().union(*shards) == whole, count
        assert sum(len(shard) for shard in shards) == len(whole), f"a series twice ({count})"
        for index, shard in enumerate(shards):
            control = {name for name, _ in shard if name in CONTROL_PLANE}
            assert (control == CONTROL_PLANE) if index == 0 else not control
            for host in {v for _, labels in shard for k, v in labels if k == "host"}:
                assert hosts[int(host[2:])].pk % count == index


def test_shard_1_of_1_is_the_whole_fleet(scrape):
    pinned("db1")
    assert set(samples(scrape_shard(scrape, 0, 1))) == set(samples(scrape()))


@pytest.mark.parametrize("query", [
    "shard=0", "shards=4", "shard=4&shards=4", "shard=-1&shards=4", "shard=0&shards=0",
    "shard=a&shards=4", "shard=0&shards=4.0", "shard=0&shards=1025", "shard=&shards=",
    "shard=0&shards=99999999999999999999", "shard=%D9%A1&shards=4",
])
def test_a_bad_shard_is_a_400_saying_how(scrape, client, query):
    pinned("db1")
    answer = client.get(f"/metrics?{query}", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert answer.status_code == 400
    assert b"?shard=I&shards=N" in answer.content


def test_a_shard_still_needs_the_token(scrape):
    assert scrape_shard(scrape, 0, 2, HTTP_AUTHORIZATION="").status_code == 401


def scrape_shard(scrape, index: int, count: int, **headers):
    from django.test import Client

    headers.setdefault("HTTP_AUTHORIZATION", f"Bearer {TOKEN}")
    return Client().get(f"/metrics?shard={index}&shards={count}", **headers)


def test_label_values_and_odd_numbers_are_written_as_the_format_wants():
    from apps.telemetry.prometheus import Gauge

    odd = ['tank/a"b', "tank/back\\slash", "tank/new\nline", "tank/ünï"]
    gauge = Gauge("pozol_x", 'help with "quotes" and \\ and\na newline', ("host", "dataset"))
    for number, name in enumerate(odd):
        gauge.add_metric(["db1", name], float(number))
    single = Gauge("pozol_y", "one label", ("host",))
    for name, number in (('a"b', float("inf")), ("c\\d", float("-inf")), ("e", 1e20)):
        single.add_metric([name], number)
    single.add_metric(["nan"], float("nan"))
    text = "".join([*gauge.lines({}), *single.lines({})])

    [x, y] = text_string_to_metric_families(text)
    assert [(s.labels["dataset"], s.value) for s in x.samples] == [
        (name, float(number)) for number, name in enumerate(odd)]
    assert x.documentation == 'help with "quotes" and \\ and\na newline'
    values = {s.labels["host"]: s.value for s in y.samples}
    assert values['a"b'] == float("inf") and values["c\\d"] == float("-inf")
    assert values["e"] == 1e20 and values["nan"] != values["nan"]
