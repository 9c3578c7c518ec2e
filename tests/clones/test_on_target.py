"""Clones on a replication link's target (issue 23) without a host: `POST /api/clones/`
with a link makes the clone on the target host from the snapshots it received, replayed
with the copy of the archive the link carried to a time, an LSN or a restore point; what
the copy does not reach is a 4xx with the target's window; the clone is a normal one, reset
to the newest moment the target holds; the link keeps an archive snapshot a clone being
made (or reset) replays from."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.clones import services
from apps.clones.models import Clone
from apps.ops.models import Operation
from apps.replication import readers
from apps.replication.models import ReplicationLink
from apps.tenants import services as tenant_services
from tests.clones import factories
from tests.tenants import factories as tenants

pytestmark = [pytest.mark.django_db]

CARRIED = factories.CARRIED


@pytest.fixture
def world():
    return factories.link_world()


def make(api, world, name="far", **moment):
    body = {"cluster": world["cluster"].pk, "link": world["link"].pk, "name": name, **moment}
    return api.post("/api/clones/", body, format="json")


@pytest.mark.parametrize(("moment", "target", "value"), [
    ({"lsn": "0/3000010"}, "lsn", "0/3000010"),
    ({"restore_point": "before-migration"}, "name", "before-migration"),
    ({"at": "time"}, "time", None)])
def test_a_clone_on_the_target_replays_the_received_snapshot_with_the_carried_archive(
        api, world, moment, target, value):
    world["archive"].restore_points.create(name="before-migration", lsn="0/4000100",
                                           created_at=world["taken"] + timedelta(minutes=3))
    if "at" in moment:
        moment = {"at": (world["taken"] + timedelta(minutes=2)).isoformat()}
        value = moment["at"]
    answer = make(api, world, **moment)
    assert answer.status_code == 202, answer.content
    clone = Clone.objects.get()
    assert (clone.host, clone.link, clone.snapshot) == (world["target"], world["link"],
                                                        "received1")
    assert clone.cluster_data_dir == world["cluster"].data_dir and clone.on_target
    assert answer.json()["clone"]["link"] == world["link"].pk
    layout = clone.decoded_layout()
    assert (layout.origin.data_dataset, layout.origin.wal_dataset) == ("bk/pg/data",
                                                                       "bk/pg/wal")
    assert layout.origin.config_file is None
    assert (layout.recovery.archive, layout.recovery.label, layout.recovery.target,
            layout.recovery.value, layout.recovery.received) == (
        "bk/pozol_wal/pg:data", CARRIED, target, value, True)
    assert Operation.objects.get().host == world["target"]
    assert readers.being_read(world["target"], "bk/pozol_wal/pg:data") == {CARRIED}
    Clone.objects.update(state=Clone.State.READY)
    assert readers.being_read(world["target"], "bk/pozol_wal/pg:data") == set()


def test_a_clone_on_the_target_is_reset_to_the_newest_moment_the_target_holds(api, world):
    answer = make(api, world, at=(world["taken"] + timedelta(minutes=2)).isoformat())
    assert answer.status_code == 202, answer.content
    clone = Clone.objects.get()
    Clone.objects.update(state=Clone.State.READY)
    Operation.objects.update(status=Operation.Status.SUCCEEDED)
    from_snapshot = api.post(f"/api/clones/{clone.pk}/reset/", {"snapshot": "received1"},
                             format="json")
    assert from_snapshot.status_code == 400, from_snapshot.content

    reset = api.post(f"/api/clones/{clone.pk}/reset/", {}, format="json")
    assert reset.status_code == 202, reset.content
    operation = Operation.objects.get(pk=reset.json()["id"])
    newest = services._target_copy(world["link"]).spans[-1][1]
    recovery = operation.state["layout"]["recovery"]
    # Replayed to the archive's end, from the base that reaches the window's end.
    assert (recovery["target"], recovery["value"], recovery["received"]) == (
        "latest", "latest", True)
    assert operation.state["new_snapshot"] == "received1"
    assert operation.state["layout"]["port"] == clone.port
    assert operation.state["target_time"] == newest.isoformat()
    clone.refresh_from_db()
    assert clone.state == Clone.State.RESETTING
    # The archive snapshot the reset will replay from stays until it runs.
    assert readers.being_read(world["target"], "bk/pozol_wal/pg:data") == {CARRIED}
    again = api.post(f"/api/clones/{clone.pk}/reset/", {}, format="json")
    assert again.status_code == 409


@pytest.mark.parametrize(("moment", "status", "code", "words"), [
    ({"lsn": "0/9000000"}, 400, "beyond_end", "beyond the end of the archive"),
    ({"lsn": "0/1000000"}, 400, "outside_window", "known WAL position"),
    ({"restore_point": "late"}, 409, "not_carried", "has not carried yet"),
    ({"restore_point": "nameless"}, 400, "invalid", "no restore point named"),
    ({"at": "early"}, 400, "outside_window", "outside the recoverable window"),
])
def test_what_the_copy_does_not_reach_is_refused_with_the_targets_window(
        api, world, moment, status, code, words):
    world["archive"].restore_points.create(name="late", lsn="0/6000100",
                                           created_at=timezone.now())
    if "at" in moment:
        moment = {"at": (world["taken"] - timedelta(hours=1)).isoformat()}
    answer = make(api, world, **moment)
    assert answer.status_code == status, answer.content
    error = answer.json()["error"]
    assert error["code"] == code and words in error["message"], error
    if code != "invalid":
        assert "on the replication target" in error["message"]
        assert "window is any moment from" in error["message"] or \
            "recoverable window: any moment from" in error["message"]
    assert not Clone.objects.exists() and not Operation.objects.exists()


def test_a_link_is_refused_for_another_cluster_host_a_snapshot_or_before_it_carried(
        api, world):
    moment = {"at": (world["taken"] + timedelta(minutes=2)).isoformat()}
    answer = make(api, world, snapshot="received1", **moment)
    assert answer.status_code == 400 and "snapshot" in answer.json()["error"]["fields"]
    answer = make(api, world, host=world["source"].pk, **moment)
    assert answer.status_code == 400 and "host" in answer.json()["error"]["fields"]
    other = factories.host("db3")
    answer = api.post("/api/clones/", {"cluster": factories.cluster(other).pk,
                                       "link": world["link"].pk, **moment}, format="json")
    assert answer.status_code == 400 and "link" in answer.json()["error"]["fields"]
    ReplicationLink.objects.update(archive_snapshot="")
    answer = make(api, world, **moment)
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "not_carried"
    assert not Clone.objects.exists()


def test_a_tenants_member_cannot_name_a_link(world):
    acme = tenants.tenant("Acme")
    tenant_services.assign_cluster(acme, world["source"], world["cluster"].data_dir)
    member = tenants.api_as(tenants.member(acme, "ana"))
    answer = make(member, world, at=(world["taken"] + timedelta(minutes=2)).isoformat())
    assert answer.status_code == 400 and "link" in answer.json()["error"]["fields"]
    assert not Clone.objects.exists()


def test_the_source_may_be_down(api, world):
    world["cluster"].running = False
    world["cluster"].save()
    answer = make(api, world, at=(world["taken"] + timedelta(minutes=2)).isoformat())
    assert answer.status_code == 202, answer.content


def test_the_link_keeps_the_archive_snapshot_a_clone_being_made_replays_from(
        api, world):
    """The next run's finish destroys the older carried snapshots on both sides, except
    on the target one a clone being made will clone (its script has not run yet)."""
    from types import SimpleNamespace

    from apps.replication import carrying
    from apps.replication.link_rows import core_link

    answer = make(api, world, at=(world["taken"] + timedelta(minutes=2)).isoformat())
    assert answer.status_code == 202, answer.content
    destroyed, logged = [], []

    def run(command, **_):
        destroyed.append(command.text)
        return SimpleNamespace(ok=True, stderr="")

    newer = "pozol-carry-to-backup-2"
    held = SimpleNamespace(snapshots=[SimpleNamespace(name=CARRIED),
                                      SimpleNamespace(name=newer)])
    ctx = SimpleNamespace(state={"carry": {"label": newer}}, runner=lambda: run,
                          log=lambda text, *_: logged.append(text))
    link = world["link"]
    carrying.forget_carried(ctx, link, core_link(link), {"tank/pozol_wal/pg:data": held},
                            {"bk/pozol_wal/pg:data": held}, run)
    assert destroyed == [f"zfs destroy tank/pozol_wal/pg:data@{CARRIED}"]
    assert logged == [f"kept bk/pozol_wal/pg:data@{CARRIED} for now: a clone being made "
                      "replays from it"]
    Clone.objects.update(state=Clone.State.READY)
    destroyed.clear()
    carrying.forget_carried(ctx, link, core_link(link), {"tank/pozol_wal/pg:data": held},
                            {"bk/pozol_wal/pg:data": held}, run)
    assert destroyed[-1] == f"zfs destroy bk/pozol_wal/pg:data@{CARRIED}"
