"""Restore drills and the reconciler without a host: schedules through the API (made,
changed, deleted, hostile input refused with a 4xx before anything runs), a drill
started with the newest common snapshot and a port from the top of the clone range,
one of a replication link started on its target from what it received, a drill with
nothing to clone failed at once with the host's alert, the tick, the pages."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

from apps.clones.models import CloneHostSettings
from apps.drills import services
from apps.drills.models import DrillRun, DrillSchedule
from apps.ops.models import Operation
from apps.replication.models import ReplicationLink
from tests.clones import factories

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def host():
    row = factories.host()
    factories.cluster(row)
    factories.snapshots(row)
    factories.snapshots(row, "pozol_manual_20261123T200000Z",
                        created_at=datetime(2026, 11, 23, 20, tzinfo=UTC))
    return row


def schedule_body(on, **changes) -> dict:
    return {"host": on.pk, "cluster": on.clusters.get().pk, **changes}


def refused(response, status=400) -> dict:
    assert response.status_code == status, response.content
    assert not Operation.objects.exists()
    return response.json()["error"]


def test_a_schedule_is_made_changed_listed_and_deleted(api, host):
    made = api.post("/api/drill-schedules/", schedule_body(host, interval_hours=6),
                    format="json")
    assert made.status_code == 201, made.content
    shown = made.json()
    assert shown["cluster_data_dir"] == "/tank/pg/data/pgdata" and shown["interval_hours"] == 6
    changed = api.put(f"/api/drill-schedules/{shown['id']}/",
                      {"interval_hours": 12, "check_query": "SELECT count(*) FROM t",
                       "enabled": False}, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["check_query"] == "SELECT count(*) FROM t"
    assert api.get("/api/drill-schedules/").json()["count"] == 1
    assert api.delete(f"/api/drill-schedules/{shown['id']}/").status_code == 204
    assert not DrillSchedule.objects.exists()


@pytest.mark.parametrize("changes, field", [
    ({"interval_hours": 0}, "interval_hours"), ({"interval_hours": "24"}, "interval_hours"),
    ({"interval_hours": True}, "interval_hours"), ({"interval_hours": 10**9}, "interval_hours"),
    ({"check_query": "\\! rm -rf /"}, "check_query"), ({"check_query": "x" * 4001},
                                                       "check_query"),
    ({"cluster": 10**9}, "cluster"), ({"cluster": None}, "cluster"),
    ({"enabled": "yes"}, "enabled"), ({"host": "1"}, "host")])
def test_bad_schedules_are_refused(api, host, changes, field):
    error = refused(api.post("/api/drill-schedules/", schedule_body(host, **changes),
                             format="json"))
    assert field in error["fields"], error
    assert not DrillSchedule.objects.exists()


def test_a_cluster_of_another_host_and_a_second_schedule_are_refused(api, host):
    other = factories.host("db2")
    factories.cluster(other)
    error = refused(api.post("/api/drill-schedules/", schedule_body(
        host, cluster=other.clusters.get().pk), format="json"))
    assert "cluster" in error["fields"]
    assert api.post("/api/drill-schedules/", schedule_body(host), format="json"
                    ).status_code == 201
    assert refused(api.post("/api/drill-schedules/", schedule_body(host), format="json"),
                   409)["code"] == "conflict"


def test_a_drill_clones_the_newest_snapshot_on_a_port_from_the_top(api, host, delivered):
    CloneHostSettings.objects.create(host=host, port_min=6500, port_max=6510)
    factories.clone(host, "dev1", port=6510)
    schedule = services.save_schedule(host=host, cluster=host.clusters.get())
    answer = api.post(f"/api/drill-schedules/{schedule.pk}/run/")
    assert answer.status_code == 202, answer.content
    run = DrillRun.objects.get()
    assert answer.json()["status"] == "running" and answer.json()["operation"] == run.operation_id
    assert run.snapshot == "pozol_manual_20261123T200000Z" and run.port == 6509
    assert run.layout["name"] == f"pozol-drill-{run.pk}" and run.layout["allowed"] == []
    assert run.operation.kind == "drills.run"
    busy = api.post(f"/api/drill-schedules/{schedule.pk}/run/")
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "busy"


def test_a_drill_with_nothing_to_clone_fails_at_once_with_the_alert(api, host):
    factories.snapshots(host, "only_data")  # both, then remove the WAL one
    host.snapshots.filter(dataset="tank/pg/wal").delete()
    schedule = services.save_schedule(host=host, cluster=host.clusters.get())
    answer = api.post(f"/api/drill-schedules/{schedule.pk}/run/").json()
    assert answer["status"] == "failed" and "no snapshot" in answer["error"]
    assert not Operation.objects.exists()
    alert = host.open_alerts.get(kind="restore_drill_failed")
    assert f"#{answer['id']}" in alert.message
    services.delete_schedule(schedule)  # no schedule failing any more: resolved
    assert not host.open_alerts.filter(kind="restore_drill_failed").exists()


def test_a_link_is_drilled_on_its_target_from_what_it_received(host, delivered):
    target = factories.host("backup1")
    link = ReplicationLink.objects.create(
        name="to-backup", source_host=host, cluster_data_dir="/tank/pg/data/pgdata",
        sources=["tank/pg/data", "tank/pg/wal"], target_host=target, target_parent="bk")
    for dataset in ("bk/pg/data", "bk/pg/wal"):
        factories.snapshot_factories.snapshot(target, f"{dataset}@received1")
    schedule = services.save_schedule(link=link)
    assert schedule.host == target
    run = services.run_now(schedule)
    assert run.host == target and run.snapshot == "received1"
    assert run.layout["origin"]["data_dataset"] == "bk/pg/data"
    assert run.layout["origin"]["wal_dataset"] == "bk/pg/wal"
    assert run.layout["origin"]["data_dir"] == "/tank/pg/data/pgdata"  # its path below
    assert run.datasets == ["bk/pg/data", "bk/pg/wal"]


def test_the_tick_starts_only_due_enabled_schedules(host, delivered):
    due = services.save_schedule(host=host, cluster=host.clusters.get(), interval_hours=1)
    other = factories.host("db2")
    factories.cluster(other)
    factories.snapshots(other)
    paused = services.save_schedule(host=other, cluster=other.clusters.get(), enabled=False)
    assert [run.schedule for run in services.tick()] == [due]
    DrillRun.objects.update(status=DrillRun.Status.PASSED)
    assert services.tick() == []  # started a moment ago
    assert len(services.tick(timezone.now() + timedelta(hours=1, minutes=1))) == 1
    assert not paused.runs.exists()


def test_clone_names_of_drills_are_refused_to_members(api, host):
    response = api.post("/api/clones/", {"host": host.pk, "cluster": host.clusters.get().pk,
                                         "snapshot": factories.SNAPSHOT,
                                         "name": "pozol-drill-1"}, format="json")
    assert response.status_code == 400 and "name" in response.json()["error"]["fields"]


def test_the_reconciler_runs_once_per_host_at_a_time(api, host, delivered):
    first = api.post(f"/api/hosts/{host.pk}/reconcile/")
    assert first.status_code == 202 and first.json()["kind"] == "drills.reconcile"
    assert api.post(f"/api/hosts/{host.pk}/reconcile/").status_code == 409
    assert api.post("/api/hosts/999999/reconcile/").status_code == 404


def test_pages_show_schedules_and_runs(signed_in, host, delivered):
    schedule = services.save_schedule(host=host, cluster=host.clusters.get())
    run = services.run_now(schedule)
    DrillRun.objects.filter(pk=run.pk).update(
        status=DrillRun.Status.FAILED, error="clone or start failed: pg_ctl: no",
        log_tail="PANIC:  could not locate a valid checkpoint record", clone_seconds=0.05)
    tab = signed_in.get(f"/hosts/{host.pk}/drills/")
    assert tab.status_code == 200
    assert f'id="drill-schedule-{schedule.pk}"' in tab.text
    assert f'id="drill-run-{run.pk}"' in tab.text
    detail = signed_in.get(f"/drills/runs/{run.pk}/")
    assert "could not locate a valid checkpoint record" in detail.text
    assert f'id="drill-run-{run.pk}"' in signed_in.get("/drills/").text
    assert signed_in.get("/drills/runs/999999/").status_code == 404


def test_the_schedule_form_refuses_hostile_input_beside_its_field(signed_in, host):
    cluster = host.clusters.get()
    response = signed_in.post(f"/drills/hosts/{host.pk}/new/",
                              {"source": f"cluster:{cluster.pk}", "interval_hours": 24,
                               "check_query": "\\! id"})
    assert response.status_code == 200 and "meta-command" in response.text
    response = signed_in.post(f"/drills/hosts/{host.pk}/new/",
                              {"source": "cluster:999999", "interval_hours": 24})
    assert response.status_code == 200 and not DrillSchedule.objects.exists()
    response = signed_in.post(f"/drills/hosts/{host.pk}/new/",
                              {"source": f"cluster:{cluster.pk}", "interval_hours": 24})
    assert response.status_code == 302 and DrillSchedule.objects.count() == 1


def test_anonymous_visitors_are_refused(client, host):
    assert client.get("/api/drills/").status_code in (401, 403)
    assert client.get("/drills/").status_code == 302


def test_the_endpoints_are_in_the_schema():
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    assert {"/api/drill-schedules/", "/api/drill-schedules/{id}/run/", "/api/drills/",
            "/api/drills/{id}/", "/api/hosts/{id}/reconcile/"} <= set(paths)


def test_a_run_whose_operation_ended_without_it_no_longer_blocks_its_schedule(host,
                                                                                delivered):
    schedule = services.save_schedule(host=host, cluster=host.clusters.get())
    stuck = services.run_now(schedule)
    Operation.objects.filter(pk=stuck.operation_id).update(
        status=Operation.Status.FAILED, error="past its deadline")
    again = services.run_now(schedule)
    stuck.refresh_from_db()
    assert stuck.status == DrillRun.Status.FAILED and "past its deadline" in stuck.error
    assert again.status == DrillRun.Status.RUNNING and again.pk != stuck.pk


def test_a_drill_with_no_free_port_fails_at_once_saying_so(host):
    CloneHostSettings.objects.create(host=host, port_min=6500, port_max=6500)
    factories.clone(host, "dev1", port=6500)
    run = services.run_now(services.save_schedule(host=host, cluster=host.clusters.get()))
    assert run.status == DrillRun.Status.FAILED and "every port" in run.error
    assert not Operation.objects.exists()


def test_a_drill_on_a_pool_at_its_reserve_is_a_failed_drill_with_the_figures(api, host):
    # A refused drill is a failed drill: the backup was not proven, so the alert says so.
    from apps.fleet.models import Dataset
    Dataset.objects.filter(host=host, name="tank").update(used=700 * 2**20,
                                                          available=300 * 2**20)
    schedule = services.save_schedule(host=host, cluster=host.clusters.get())
    answer = api.post(f"/api/drill-schedules/{schedule.pk}/run/").json()
    assert answer["status"] == "failed" and "reserve" in answer["error"]
    assert "MiB" in answer["error"]
    assert not Operation.objects.exists()
    assert host.open_alerts.filter(kind="restore_drill_failed").exists()


def test_a_drill_to_a_moment_needs_an_archive_and_draws_its_moment_in_the_window(api, host):
    from apps.wal.models import WalArchive

    body = schedule_body(host, target="random_moment")
    error = refused(api.post("/api/drill-schedules/", body, format="json"), 409)
    assert error["code"] == "not_archiving" and "target" in error["fields"]
    bad = refused(api.post("/api/drill-schedules/", schedule_body(host, target="whenever"),
                           format="json"))
    assert "target" in bad["fields"]
    cluster = host.clusters.get()
    taken = timezone.now() - timedelta(minutes=10)
    factories.snapshots(host, "pozol_manual_recent", created_at=taken)
    segments = [[n, taken.timestamp() + 60 * (n - 1)] for n in (2, 3, 4, 5)]
    archive = WalArchive.objects.create(
        cluster=cluster, dataset="tank/pozol_wal/pg:data", directory="/tank/pozol_wal/pg:data",
        state=WalArchive.State.ON, checked_at=timezone.now(), segment_size=16 * 2**20,
        listing={"timeline": 1, "segments": segments}, archive_timeout=60,
        window=[[taken.timestamp() + 1, taken.timestamp() + 240]])
    made = api.post("/api/drill-schedules/", body, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["target"] == "random_moment"
    ran = api.post(f"/api/drill-schedules/{made.json()['id']}/run/")
    assert ran.status_code == 202, ran.content
    run = DrillRun.objects.get()
    assert run.status == DrillRun.Status.RUNNING, run.error
    assert taken.timestamp() + 1 <= run.target_time.timestamp() <= taken.timestamp() + 240
    assert run.archive_timeout == 60 and run.snapshot == "pozol_manual_recent"
    recovery = run.layout["recovery"]
    assert recovery["target"] == "time" and recovery["label"] == f"pozol-pitr-{run.clone_name}"
    assert ran.json()["target_time"]
    # An empty window: the run fails at once, saying why.
    WalArchive.objects.filter(pk=archive.pk).update(window=[])
    DrillRun.objects.update(status=DrillRun.Status.PASSED)
    run = services.run_now(DrillSchedule.objects.get())
    assert run.status == DrillRun.Status.FAILED and "reaches no moment" in run.error


def test_a_link_carrying_the_archive_is_drilled_to_a_moment_on_its_target(api, host,
                                                                           delivered):
    """Issue 23: the target replays its received snapshot with the copy of the archive
    the link carried, cloning the received archive snapshot (never taking one)."""
    from apps.wal.models import WalArchive

    target = factories.host("backup1")
    link = ReplicationLink.objects.create(
        name="to-backup", source_host=host, cluster_data_dir="/tank/pg/data/pgdata",
        sources=["tank/pg/data", "tank/pg/wal"], target_host=target, target_parent="bk")
    schedule = services.save_schedule(link=link)
    body = {"at": timezone.now().isoformat()}
    error = refused(api.post(f"/api/drill-schedules/{schedule.pk}/run/", body,
                             format="json"), 409)
    assert error["code"] == "not_archiving"
    taken = timezone.now() - timedelta(minutes=10)
    WalArchive.objects.create(
        cluster=host.clusters.get(), dataset="tank/pozol_wal/pg:data",
        directory="/tank/pozol_wal/pg:data", state=WalArchive.State.ON, archive_timeout=30)
    error = refused(api.post(f"/api/drill-schedules/{schedule.pk}/run/", body,
                             format="json"), 409)
    assert error["code"] == "not_carried" and "run it once" in error["message"]

    for dataset in ("bk/pg/data", "bk/pg/wal"):
        factories.snapshot_factories.snapshot(target, f"{dataset}@received1",
                                              created_at=taken)
    segments = [[n, taken.timestamp() + 60 * (n - 1)] for n in (2, 3, 4, 5)]
    ReplicationLink.objects.filter(pk=link.pk).update(
        archive="tank/pozol_wal/pg:data", archive_snapshot="pozol-carry-to-backup-1",
        archive_listing={"timeline": 1, "segments": segments},
        archive_floor=taken.timestamp(), archive_window=[[taken.timestamp() + 1,
                                                          taken.timestamp() + 240]])
    late = {"at": (taken + timedelta(hours=1)).isoformat()}
    error = refused(api.post(f"/api/drill-schedules/{schedule.pk}/run/", late,
                             format="json"))
    assert "on the replication target" in error["message"] and "at" in error["fields"]
    assert not DrillRun.objects.exists()

    moment = taken + timedelta(minutes=2)
    ran = api.post(f"/api/drill-schedules/{schedule.pk}/run/", {"at": moment.isoformat()},
                   format="json")
    assert ran.status_code == 202, ran.content
    run = DrillRun.objects.get()
    assert run.host == target and run.snapshot == "received1" and run.archive_timeout == 30
    assert run.target_time == moment
    assert run.layout["recovery"] == {"archive": "bk/pozol_wal/pg:data",
                                      "label": "pozol-carry-to-backup-1", "target": "time",
                                      "value": moment.isoformat(), "received": True}
    # A schedule to a random moment draws in the target's window.
    DrillRun.objects.update(status=DrillRun.Status.PASSED)
    services.save_schedule(schedule=schedule, target="random_moment")
    drawn = services.run_now(schedule)
    assert drawn.status == DrillRun.Status.RUNNING, drawn.error
    assert taken.timestamp() + 1 <= drawn.target_time.timestamp() <= taken.timestamp() + 240
