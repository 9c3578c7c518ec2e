"""The alerting API and pages through a real token / a signed-in operator."""

import pytest
from django.utils import timezone

from apps.alerts.models import Alert, Channel, Delivery, Rule, Silence
from tests.benchmarks import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def allow_local(settings):
    settings.POZOL = {**settings.POZOL,
                      "ALERT_WEBHOOK_ALLOW": ["127.0.0.1/32", "hooks.example.com"]}


def test_rules_are_built_in_and_editable(api):
    kinds = {r["kind"] for r in api.get("/api/alert-rules/").json()["results"]}
    assert {"unreachable", "arc_hit_rate", "pool_capacity", "pool_health", "scrub_overdue",
            "host_key_changed", "profile_drift", "operation_failed", "replication_lag",
            "snapshots_stale", "restore_drill_failed"} <= kinds
    answer = api.patch("/api/alert-rules/pool_capacity/", {"threshold": 90, "clear_minutes": 10},
                       format="json")
    assert answer.status_code == 200, answer.json()
    assert Rule.objects.get(kind="pool_capacity").threshold == 90


@pytest.mark.parametrize(("body", "field"), [
    ({"threshold": 150}, "threshold"), ({"threshold": None}, "threshold"),
    ({"threshold": "a lot"}, "threshold"), ({"hysteresis": -2}, "hysteresis"),
    ({"for_minutes": -1}, "for_minutes"), ({"for_minutes": 10**9}, "for_minutes"),
    ({"enabled": "maybe"}, "enabled")])
def test_bad_thresholds_are_a_400_naming_the_field(api, body, field, builtin_rules):
    answer = api.patch("/api/alert-rules/pool_capacity/", body, format="json")
    assert answer.status_code == 400
    assert field in answer.json()["error"]["fields"]
    assert Rule.objects.get(kind="pool_capacity").threshold == 80


def test_a_rule_without_a_threshold_refuses_one(api):
    answer = api.patch("/api/alert-rules/host_key_changed/", {"threshold": 5}, format="json")
    assert answer.status_code == 400
    assert answer.json()["error"]["fields"]["threshold"] == ["this rule has no threshold"]


@pytest.mark.parametrize("target", [
    "http://169.254.169.254/latest/", "http://127.0.0.2:6379/", "http://localhost/",
    "https://evil.example.org/hook", "javascript:alert(1)", "http://[::1]:80/"])
def test_webhooks_to_addresses_not_allowed_are_refused(api, allow_local, target):
    answer = api.post("/api/alert-channels/", {"name": "x", "kind": "webhook",
                                               "target": target}, format="json")
    assert answer.status_code == 400
    assert "target" in answer.json()["error"]["fields"]
    assert not Channel.objects.exists()


def test_channels_are_created_changed_tested_and_deleted(api, allow_local, monkeypatch):
    from apps.alerts import delivery
    monkeypatch.setattr(delivery, "enqueue", lambda ids: None)
    made = api.post("/api/alert-channels/", {"name": "chat", "kind": "slack",
                                             "target": "https://hooks.example.com/T1"},
                    format="json")
    assert made.status_code == 201, made.json()
    pk = made.json()["id"]
    assert api.post("/api/alert-channels/", {"name": "mail", "kind": "email",
                                             "target": "ops@, nobody"},
                    format="json").status_code == 400
    taken = api.post("/api/alert-channels/", {"name": "chat", "kind": "email",
                                              "target": "a@example.com"}, format="json")
    assert taken.status_code == 409, taken.content  # the name is taken, as elsewhere
    assert taken.json()["error"]["code"] == "conflict"
    assert "name" in taken.json()["error"]["fields"]
    assert api.patch(f"/api/alert-channels/{pk}/", {"target": "http://10.9.9.9/"},
                     format="json").status_code == 400
    tested = api.post(f"/api/alert-channels/{pk}/test/")
    assert tested.status_code == 202 and tested.json()["event"] == "test"
    assert api.get("/api/alert-deliveries/?event=test").json()["count"] == 1
    assert api.delete(f"/api/alert-channels/{pk}/").status_code == 204


def test_alerts_are_acknowledged_and_silenced(api, operator):
    alert = Alert.raise_once(factories.host("db1"), "pool_health", "pool tank is DEGRADED")
    listed = api.get("/api/alerts/?open=true").json()
    assert [a["id"] for a in listed["results"]] == [alert.pk]
    acked = api.post(f"/api/alerts/{alert.pk}/acknowledge/").json()
    assert acked["acknowledged_by"] == "olga" and acked["acknowledged_at"]
    assert api.post(f"/api/alerts/{alert.pk}/silence/", {"minutes": 0},
                    format="json").status_code == 400
    silenced = api.post(f"/api/alerts/{alert.pk}/silence/", {"minutes": 60, "reason": "disk"},
                        format="json")
    assert silenced.status_code == 201
    assert api.delete(f"/api/alert-silences/{silenced.json()['id']}/").status_code == 204
    assert not Silence.objects.filter(until__gt=timezone.now()).exists()  # ended, kept
    assert Silence.objects.count() == 1
    assert api.post("/api/alert-silences/", {"kind": "nope", "minutes": 5},
                    format="json").status_code == 400


def test_the_pages_show_alerts_rules_channels_and_the_log(signed_in, allow_local):
    alert = Alert.raise_once(factories.host("db1"), "pool_health", "pool tank is DEGRADED")
    channel = Channel.objects.create(name="ops", kind="email", target="ops@example.com")
    Delivery.objects.create(alert=alert, channel=channel, event="firing", body={},
                            status="failed", attempts=5, last_error="HTTP 500")
    for path in ("/alerts/", f"/alerts/{alert.pk}/", "/alerts/rules/", "/alerts/scrubs/",
                 "/alerts/rules/pool_capacity/", "/alerts/channels/",
                 f"/alerts/channels/{channel.pk}/", "/alerts/deliveries/"):
        assert signed_in.get(path).status_code == 200, path
    assert "pool tank is DEGRADED" in signed_in.get("/alerts/").content.decode()
    assert "HTTP 500" in signed_in.get("/alerts/deliveries/").content.decode()
    refused = signed_in.post("/alerts/rules/pool_capacity/", {
        "enabled": "on", "threshold": "120", "hysteresis": "0", "for_minutes": "0",
        "clear_minutes": "5"})
    assert refused.status_code == 400 and "must be between 1 and 99" in refused.content.decode()
    bad_hook = signed_in.post("/alerts/channels/", {"name": "h", "kind": "webhook",
                                                    "target": "http://169.254.169.254/"})
    assert bad_hook.status_code == 400 and "not in the allowed" in bad_hook.content.decode()
    assert signed_in.post(f"/alerts/{alert.pk}/acknowledge/").status_code == 302
    assert Alert.objects.get(pk=alert.pk).acknowledged_at is not None
    assert signed_in.post(f"/alerts/{alert.pk}/silence/", {"minutes": "60"}).status_code == 302
    assert signed_in.post(f"/alerts/{alert.pk}/silence/", {"minutes": "7"}).status_code == 400


def test_scrub_schedules_are_checked_and_run_as_operations(api, monkeypatch):
    from apps.fleet.models import Pool
    from apps.ops import engine

    monkeypatch.setattr(engine, "deliver", lambda *a, **k: None)
    host = factories.host("db1")
    Pool.objects.create(host=host, name="tank")
    for body in ({"host": host.pk, "pool": "tank; rm -rf /"}, {"host": host.pk, "pool": "nope"},
                 {"host": host.pk, "pool": "tank", "every_days": 0}):
        assert api.post("/api/scrub-schedules/", body, format="json").status_code == 400, body
    made = api.post("/api/scrub-schedules/", {"host": host.pk, "pool": "tank"}, format="json")
    assert made.status_code == 201 and made.json()["every_days"] == 30
    pk = made.json()["id"]
    assert api.post("/api/scrub-schedules/", {"host": host.pk, "pool": "tank"},
                    format="json").status_code == 409  # one schedule per pool: a clash
    ran = api.post(f"/api/scrub-schedules/{pk}/run/")
    assert ran.status_code == 202 and ran.json()["kind"] == "pools.scrub"
    assert api.post(f"/api/scrub-schedules/{pk}/run/").status_code == 409  # one at a time
    assert api.get(f"/api/scrub-schedules/{pk}/").json()["last_status"] == "pending"
    assert api.patch(f"/api/scrub-schedules/{pk}/", {"pool": "other"},
                     format="json").status_code == 400
