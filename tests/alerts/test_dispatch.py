"""Firing once, staying open, resolving with hysteresis, silences and rules, on the
database (deliveries recorded, not sent: tests/alerts/test_delivery.py sends)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.alerts import dispatch, evaluate, services
from apps.alerts.models import Alert, Channel, Delivery, Rule
from apps.ops.models import Operation
from apps.telemetry.models import HostTelemetry, RawSample
from tests.benchmarks import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def host(db):
    return factories.host("db1")


@pytest.fixture
def channel(db):
    return Channel.objects.create(name="ops", kind=Channel.Kind.EMAIL, target="ops@example.com")


def later(minutes: float):
    return timezone.now() + timedelta(minutes=minutes)


def events(alert: Alert) -> list[str]:
    return list(Delivery.objects.filter(alert=alert).order_by("pk").values_list("event", flat=True))


def test_an_alert_fires_once_after_its_rule_time_and_resolves_after_its_clear_time(
        host, channel, enqueued):
    Rule.objects.filter(kind="pool_capacity").update(for_minutes=0, clear_minutes=5)
    Alert.raise_or_resolve(host, "pool_capacity", "pool tank is 91% full")
    alert = Alert.objects.get()
    assert dispatch.announce(later(0.1)) == 1
    Alert.raise_or_resolve(host, "pool_capacity", "pool tank is 93% full")  # still true
    assert dispatch.announce(later(1)) == 0
    assert events(alert) == ["firing"] and len(enqueued) == 1

    Alert.raise_or_resolve(host, "pool_capacity", None)
    assert dispatch.announce(later(2)) == 0  # resolved, not for 5 minutes yet
    assert dispatch.announce(later(6)) == 1
    assert events(alert) == ["firing", "resolved"]
    body = Delivery.objects.get(event="resolved").body
    assert body["status"] == "resolved" and body["host"] == "db1" and body["resolved_at"]


def test_a_condition_back_before_the_clear_time_is_the_same_alert(host, channel, enqueued):
    Alert.raise_or_resolve(host, "pool_capacity", "pool tank is 91% full")
    dispatch.announce(later(0.1))
    Alert.raise_or_resolve(host, "pool_capacity", None)
    Alert.raise_or_resolve(host, "pool_capacity", "pool tank is 90% full")  # flapping
    assert Alert.objects.count() == 1
    alert = Alert.objects.get()
    assert alert.resolved_at is None and alert.message == "pool tank is 90% full"
    assert dispatch.announce(later(10)) == 0
    assert events(alert) == ["firing"]


def test_unreachable_is_delivered_only_after_its_minutes(host, channel, enqueued):
    Alert.raise_once(host, "unreachable", "db1 could not be reached")  # rule: 5 minutes
    assert dispatch.announce(later(4)) == 0
    Alert.objects.update(resolved_at=timezone.now())  # back within the 5 minutes
    assert dispatch.announce(later(30)) == 0
    assert not Delivery.objects.exists()


def test_a_disabled_rule_delivers_nothing(host, channel, enqueued, builtin_rules):
    Rule.objects.filter(kind="host_key_changed").update(enabled=False)
    Alert.raise_once(host, "host_key_changed", "the key changed")
    assert dispatch.announce(later(1)) == 0


def test_a_silence_keeps_the_alert_but_delivers_nothing(host, channel, enqueued, operator):
    alert = Alert.raise_once(host, "host_key_changed", "the key changed")
    services.silence_alert(alert, minutes=60, reason="rekeying", by=operator)
    assert dispatch.announce(later(1)) == 0
    alert.refresh_from_db()
    assert alert.notified_at is not None and alert.resolved_at is None
    assert not Delivery.objects.exists()


def test_an_ended_silence_delivers_again(host, channel, enqueued, operator):
    other = factories.host("db2")
    quiet = services.silence(host=host, kind="", minutes=60, reason="", by=operator)
    services.end_silence(quiet)
    Alert.raise_once(host, "host_key_changed", "the key changed")
    Alert.raise_once(other, "host_key_changed", "the key changed")
    assert dispatch.announce(later(1)) == 2


def test_acknowledging_keeps_who_and_when(host, operator):
    alert = services.acknowledge(Alert.raise_once(host, "unreachable", "down"), operator)
    assert alert.acknowledged_by == operator and alert.acknowledged_at is not None


def sample(host, minutes_ago: float, hits: int, misses: int) -> None:
    RawSample.objects.create(host=host, taken_at=timezone.now() - timedelta(minutes=minutes_ago),
                             values={"arc": {"hits": hits, "misses": misses}})


def test_the_arc_rule_fires_under_its_threshold_and_clears_above_the_margin(host):
    Rule.objects.filter(kind="arc_hit_rate").update(threshold=80, hysteresis=5)
    sample(host, 2, 10_000, 1_000)
    sample(host, 1, 10_700, 1_300)  # 70% over the minute
    evaluate.evaluate_all(timezone.now())
    alert = Alert.objects.get(kind="arc_hit_rate", resolved_at=None)
    assert alert.message == "ARC hit rate 70.0% is under 80%"
    sample(host, 0.5, 11_520, 1_480)  # 82%: inside the band, still firing
    evaluate.evaluate_all(timezone.now())
    assert Alert.objects.filter(kind="arc_hit_rate", resolved_at=None).exists()
    sample(host, 0.1, 12_420, 1_580)  # 90%
    evaluate.evaluate_all(timezone.now())
    assert not Alert.objects.filter(kind="arc_hit_rate", resolved_at=None).exists()


def test_pool_health_and_overdue_scrubs_come_from_the_last_sample(host):
    host.created_at = timezone.now() - timedelta(days=100)
    host.save(update_fields=["created_at"])
    HostTelemetry.objects.create(host=host, last_sample={"pools": [
        {"name": "tank", "health": "DEGRADED", "checksum_errors": 2,
         "scrub": {"state": "none", "ended": None}}]})
    evaluate.evaluate_all(timezone.now())
    open_alerts = dict(Alert.objects.filter(resolved_at=None).values_list("kind", "message"))
    assert open_alerts == {"pool_health": "pool tank is DEGRADED; pool tank has 2 checksum errors",
                           "scrub_overdue": "pool tank has no finished scrub"}


def test_a_failed_operation_fires_until_that_kind_succeeds(host):
    now = timezone.now()
    Operation.objects.create(kind="tuning.apply", host=host, subject="db1", step="x",
                             status=Operation.Status.FAILED, error="boom", finished_at=now)
    evaluate.evaluate_all(now)
    alert = Alert.objects.get(kind="operation_failed", resolved_at=None)
    assert "tuning.apply failed: boom" in alert.message
    Operation.objects.create(kind="tuning.apply", host=host, subject="db1", step="x",
                             status=Operation.Status.SUCCEEDED, finished_at=later(0.1))
    evaluate.evaluate_all(later(0.2))
    assert not Alert.objects.filter(kind="operation_failed", resolved_at=None).exists()


def test_the_pool_capacity_rule_sets_discovery_threshold(builtin_rules):
    from apps.fleet import capacity

    services.update_rule(Rule.objects.get(kind="pool_capacity"), threshold=60)
    assert capacity.threshold() == 60
