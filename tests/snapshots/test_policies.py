"""Snapshot policies without SSH: the tick starts one operation per due target (never two
at once), the staleness alert comes and goes, the API validates, previews and documents."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.alerts.models import Alert
from apps.ops.models import Operation
from apps.snapshots import policies
from apps.snapshots.models import PolicyAssignment, SnapshotPolicy
from tests.snapshots import factories

pytestmark = [pytest.mark.django_db]

NOW = datetime(2026, 11, 23, 19, 0, 5, tzinfo=UTC)
HOSTILE = ["a;b", "$(reboot)", "`id`", "-oProxyCommand=sh", "ünïcødé", "a b", "x" * 70]


@pytest.fixture
def db_host():
    return factories.host()


@pytest.fixture
def assigned(db_host):
    policy = SnapshotPolicy.objects.create(name="often", frequently=2, frequent_minutes=1)
    factories.cluster(db_host)
    cluster = db_host.clusters.get()
    return policies.assign(policy, db_host, cluster_data_dir=cluster.data_dir)


def ours(host, name: str, at: datetime, dataset="tank/pg/data", **changes):
    stamp = at.strftime("%Y%m%dT%H%M%SZ")
    return factories.snapshot(host, f"{dataset}@{name}", created_at=at, properties={
        "pozol:owner": "pozol", "pozol:policy": "often", "pozol:taken": stamp}, **changes)


def test_a_due_target_gets_one_operation_and_no_second_while_it_runs(delivered, assigned):
    started = policies.tick(NOW)
    assert len(started) == 1
    operation = started[0]
    assert operation.kind == "snapshots.policy" and operation.trigger == "schedule"
    state = operation.state
    assert state["snapshot"] == "pozol_often_20261123T190005Z"
    assert state["properties"]["pozol:policy"] == "often"
    assert state["properties"]["pozol:taken"] == "20261123T190005Z"
    assert state["plan"]["method"] == "recursive"
    assert policies.tick(NOW + timedelta(minutes=1)) == []  # still running
    Operation.objects.filter(pk=operation.pk).update(status=Operation.Status.SUCCEEDED)
    assert len(policies.tick(NOW + timedelta(minutes=1))) == 1


def test_nothing_is_started_when_the_slot_has_its_snapshot_or_the_policy_is_off(
        delivered, assigned, db_host):
    for dataset in ("tank", "tank/pg", "tank/pg/data", "tank/pg/wal"):
        ours(db_host, "pozol_often_20261123T190000Z", NOW.replace(second=0), dataset=dataset)
    assert policies.tick(NOW) == []
    assigned.policy.enabled = False
    assigned.policy.save()
    assert policies.tick(NOW + timedelta(minutes=5)) == []


def test_a_stale_policy_raises_an_alert_on_the_host_and_resolves_it_when_fresh(
        delivered, assigned, db_host):
    PolicyAssignment.objects.filter(pk=assigned.pk).update(assigned_at=NOW - timedelta(hours=1))
    policies.tick(NOW)
    alert = Alert.objects.get(host=db_host, kind="snapshots_stale")
    assert alert.resolved_at is None and "no snapshot of policy 'often'" in alert.message
    Operation.objects.update(status=Operation.Status.SUCCEEDED)
    for dataset in ("tank", "tank/pg", "tank/pg/data", "tank/pg/wal"):
        ours(db_host, "pozol_often_20261123T190100Z", NOW + timedelta(minutes=1),
             dataset=dataset)
    policies.tick(NOW + timedelta(minutes=1, seconds=30))
    alert.refresh_from_db()
    assert alert.resolved_at is not None


def test_disabling_the_only_policy_resolves_its_alert(delivered, assigned, db_host):
    PolicyAssignment.objects.filter(pk=assigned.pk).update(assigned_at=NOW - timedelta(hours=1))
    policies.tick(NOW)
    assigned.policy.enabled = False
    assigned.policy.save()
    policies.tick(NOW + timedelta(minutes=1))
    assert not Alert.objects.filter(kind="snapshots_stale", resolved_at=None).exists()


def test_the_preview_lists_exactly_what_lower_counts_would_prune(api, assigned, db_host):
    for minute in range(4):
        ours(db_host, f"pozol_often_2026112319{minute:02}00Z", NOW + timedelta(minutes=minute))
    factories.snapshot(db_host, "tank/pg/data@byhand", origin="hand", properties={})
    response = api.post(f"/api/snapshot-policies/{assigned.policy.pk}/preview/",
                        {"frequently": 1}, format="json")
    assert response.status_code == 200, response.content
    [target] = response.json()["targets"]
    assert target["target"].startswith("cluster ")
    assert target["destroy"] == [f"tank/pg/data@pozol_often_2026112319{m:02}00Z"
                                 for m in (0, 1, 2)]
    assert target["added"] == ["tank/pg/data@pozol_often_20261123190200Z"]
    assert SnapshotPolicy.objects.get().frequently == 2  # nothing saved


def test_the_api_creates_policies_and_assignments_and_refuses_bad_ones(api, db_host):
    response = api.post("/api/snapshot-policies/", {"name": "daily", "daily": 7}, format="json")
    assert response.status_code == 201, response.content
    pk = response.json()["id"]
    taken = api.post("/api/snapshot-policies/", {"name": "daily", "daily": 3}, format="json")
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "conflict"
    response = api.patch(f"/api/snapshot-policies/{pk}/", {"name": "other"}, format="json")
    assert response.status_code == 400 and "name" in response.json()["error"]["fields"]
    response = api.patch(f"/api/snapshot-policies/{pk}/", {"daily": 100000}, format="json")
    assert response.status_code == 400 and "daily" in response.json()["error"]["fields"]
    response = api.patch(f"/api/snapshot-policies/{pk}/", {"frequent_minutes": 7},
                         format="json")
    assert response.status_code == 400
    response = api.post("/api/policy-assignments/", {"policy": pk, "host": db_host.pk,
                                                     "dataset": "tank/pg/data"}, format="json")
    assert response.status_code == 201, response.content
    again = api.post("/api/policy-assignments/", {"policy": pk, "host": db_host.pk,
                                                  "dataset": "tank/pg/data"}, format="json")
    assert again.status_code == 409, again.content  # one policy per target: a clash
    both = api.post("/api/policy-assignments/", {"policy": pk, "host": db_host.pk},
                    format="json")
    assert both.status_code == 400


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_names_prefixes_and_datasets_are_refused(api, db_host, hostile):
    assert api.post("/api/snapshot-policies/", {"name": hostile}, format="json"
                    ).status_code == 400
    assert api.post("/api/snapshot-policies/", {"name": "ok", "prefix": hostile},
                    format="json").status_code == 400
    policy = SnapshotPolicy.objects.create(name="fine")
    response = api.post("/api/policy-assignments/", {"policy": policy.pk, "host": db_host.pk,
                                                     "dataset": hostile}, format="json")
    assert response.status_code == 400, response.content
    assert not SnapshotPolicy.objects.exclude(pk=policy.pk).exists()
    assert not PolicyAssignment.objects.exists()


def test_the_schema_documents_policies(api):
    paths = api.get("/api/schema/?format=json").json()["paths"]
    assert "/api/snapshot-policies/{id}/preview/" in paths
    assert "/api/policy-assignments/" in paths


def test_a_policy_cannot_be_renamed_even_by_code():
    policy = SnapshotPolicy.objects.create(name="keep")
    policy.name = "other"
    with pytest.raises(ValueError, match="cannot be renamed"):
        policy.save()
