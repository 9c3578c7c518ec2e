"""/api/rollouts/: what starting one records, and every bad input a clear 4xx."""

from __future__ import annotations

import pytest

from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.rollouts.models import Rollout
from apps.tuning import services as tuning
from apps.tuning.models import Profile

pytestmark = pytest.mark.django_db


def body(profile, hosts, **more) -> dict:
    return {"profile": profile.pk, "hosts": [host.pk for host in hosts], "wave_size": 1,
            **more}


def test_a_rollout_records_its_waves_and_starts_one_operation(api, replayed_host, second_host,
                                                              delivered):
    profile = Profile.objects.get(slug="oltp-safe")
    answer = api.post("/api/rollouts/", body(profile, [replayed_host, second_host],
                                             canary=second_host.pk,
                                             rollback_earlier_waves=True), format="json")
    assert answer.status_code == 201, answer.content
    rollout = answer.json()
    assert (rollout["status"], rollout["waves"], rollout["wave"]) == ("running", 2, 0)
    assert rollout["version"] == profile.current.number and rollout["rollback_earlier_waves"]
    assert [(h["host_name"], h["wave"], h["state"]) for h in rollout["hosts"]] == [
        ("db2", 0, "waiting"), ("db1", 1, "waiting")]
    operation = Operation.objects.get(pk=rollout["operation"]["id"])
    assert (operation.kind, operation.step, operation.host) == ("rollout.run", "baseline", None)
    listed = api.get("/api/rollouts/").json()
    assert [r["id"] for r in listed["results"]] == [rollout["id"]]


def test_a_host_in_a_running_rollout_is_refused_a_second_one(api, replayed_host, delivered):
    profile = Profile.objects.get(slug="oltp-safe")
    assert api.post("/api/rollouts/", body(profile, [replayed_host]),
                    format="json").status_code == 201
    again = api.post("/api/rollouts/", body(profile, [replayed_host]), format="json")
    assert again.status_code == 400
    assert "already in a running rollout" in again.json()["error"]["message"]


def test_pause_and_resume(api, replayed_host, delivered, django_capture_on_commit_callbacks):
    profile = Profile.objects.get(slug="oltp-safe")
    rollout = api.post("/api/rollouts/", body(profile, [replayed_host]), format="json").json()
    paused = api.post(f"/api/rollouts/{rollout['id']}/pause/")
    assert paused.status_code == 200 and paused.json()["paused"] is True
    Operation.objects.filter(pk=rollout["operation"]["id"]).update(status="waiting")
    delivered.clear()
    with django_capture_on_commit_callbacks(execute=True):
        resumed = api.post(f"/api/rollouts/{rollout['id']}/resume/")
    assert resumed.status_code == 200 and resumed.json()["paused"] is False
    assert delivered == [rollout["operation"]["id"]]  # woken, not left to its wait
    Rollout.objects.filter(pk=rollout["id"]).update(status="succeeded")
    ended = api.post(f"/api/rollouts/{rollout['id']}/pause/")
    assert ended.status_code == 409 and "succeeded" in ended.json()["error"]["message"]
    assert api.post("/api/rollouts/999999/pause/").status_code == 404


def test_a_version_that_cannot_apply_on_a_host_is_refused_naming_it(api, replayed_host,
                                                                    second_host):
    # A valid formula whose value on these hosts is above work_mem's maximum.
    profile = tuning.create_profile(name="Too much work_mem", settings={
        "zfs": {}, "module": {}, "sysctl": {}, "postgres": {"work_mem": "ram * 4096"}})
    answer = api.post("/api/rollouts/", body(profile, [replayed_host, second_host]),
                      format="json")
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["fields"]["hosts"][0].startswith("db1: ")
    assert not Rollout.objects.exists()


def test_an_undiscovered_host_is_refused(api, replayed_host):
    fresh = Host.objects.create(name="new", address="127.0.0.11",
                                host_key_state=Host.KeyState.PINNED)
    answer = api.post("/api/rollouts/", body(Profile.objects.get(slug="oltp-safe"),
                                             [replayed_host, fresh]), format="json")
    assert answer.status_code == 400
    assert answer.json()["error"]["fields"]["hosts"] == ["new: not discovered yet"]


@pytest.mark.parametrize(("change", "field"), [
    ({"hosts": []}, "hosts"),
    ({"hosts": [999999]}, "hosts"),
    ({"hosts": "1"}, "hosts"),
    ({"wave_size": 0}, "wave_size"),
    ({"wave_size": "2"}, "wave_size"),
    ({"profile": 999999}, "profile"),
    ({"version": 999}, "version"),
    ({"validation": "pgbench-please"}, "validation"),
    ({"canary": 999999}, "canary"),
    ({"rollback_earlier_waves": "yes"}, "rollback_earlier_waves"),
    ({"pgbench_seconds": 0}, "pgbench_seconds"),
    ({"max_tps_drop_percent": 101}, "max_tps_drop_percent"),
    ({"version": 2**31}, "version"),
])
def test_bad_input_is_a_400_naming_the_field(api, replayed_host, second_host, change, field):
    request = {**body(Profile.objects.get(slug="oltp-safe"), [replayed_host]), **change}
    answer = api.post("/api/rollouts/", request, format="json")
    assert answer.status_code == 400, answer.content
    assert field in answer.json()["error"]["fields"], answer.json()
    assert not Rollout.objects.exists()


def test_a_canary_outside_the_hosts_and_a_host_twice_are_refused(api, replayed_host,
                                                                 second_host):
    profile = Profile.objects.get(slug="oltp-safe")
    outside = api.post("/api/rollouts/", body(profile, [replayed_host],
                                              canary=second_host.pk), format="json")
    assert outside.status_code == 400 and "canary" in outside.json()["error"]["fields"]
    twice = api.post("/api/rollouts/", body(profile, [replayed_host, replayed_host]),
                     format="json")
    assert twice.status_code == 400 and "hosts" in twice.json()["error"]["fields"]


def test_an_archived_profile_is_refused(api, replayed_host):
    profile = tuning.create_profile(name="Old", settings={
        "zfs": {}, "module": {}, "sysctl": {}, "postgres": {}})
    tuning.make_plan(replayed_host, version=profile.current)
    assert tuning.delete_profile(profile) == "archived"
    answer = api.post("/api/rollouts/", body(profile, [replayed_host]), format="json")
    assert answer.status_code == 409 and "archived" in answer.json()["error"]["message"]


def test_a_host_forgotten_leaves_its_rollouts(api, replayed_host, second_host, delivered):
    profile = Profile.objects.get(slug="oltp-safe")
    rollout = api.post("/api/rollouts/", body(profile, [replayed_host, second_host]),
                       format="json").json()
    assert api.delete(f"/api/hosts/{second_host.pk}/").status_code == 204
    hosts = api.get(f"/api/rollouts/{rollout['id']}/").json()["hosts"]
    assert [h["host_name"] for h in hosts] == ["db1"]


def test_a_repeated_idempotency_key_starts_one_rollout(api, replayed_host, delivered):
    request = body(Profile.objects.get(slug="oltp-safe"), [replayed_host])
    first = api.post("/api/rollouts/", request, format="json", HTTP_IDEMPOTENCY_KEY="ro-1")
    again = api.post("/api/rollouts/", request, format="json", HTTP_IDEMPOTENCY_KEY="ro-1")
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json()["id"] == first.json()["id"]
    assert Rollout.objects.count() == 1
    assert Operation.objects.filter(kind="rollout.run").count() == 1


def test_cancelling_its_operation_ends_the_rollout_as_cancelled(api, replayed_host, delivered):
    request = body(Profile.objects.get(slug="oltp-safe"), [replayed_host])
    rollout = api.post("/api/rollouts/", request, format="json").json()
    cancelled = api.post(f"/api/operations/{rollout['operation']['id']}/cancel/")
    assert cancelled.status_code in (200, 202), cancelled.content
    assert api.get(f"/api/rollouts/{rollout['id']}/").json()["status"] == "cancelled"
    refused = api.post(f"/api/rollouts/{rollout['id']}/pause/")
    assert refused.status_code == 409 and "is cancelled" in refused.json()["error"]["message"]
    # Its hosts are free for the next rollout.
    assert api.post("/api/rollouts/", request, format="json").status_code == 201
