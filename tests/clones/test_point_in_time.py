"""Clones to a moment without a host: the service asks apps.wal which snapshot serves
the moment from the archive as its last check listed it; every bad moment is a 4xx
naming the field, with the window in the message; the layout carries the replay and
the creation script replays, promotes and records where it stopped."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from apps.clones.core import commands
from apps.clones.core.layout import CloneError, Layout, Recovery
from apps.clones.models import Clone
from apps.ops.models import Operation
from apps.wal.models import WalArchive
from tests.clones import factories

pytestmark = [pytest.mark.django_db]

SIZE = 16 * 2**20


@pytest.fixture
def host():
    """A cluster archiving, its snapshot taken 10 minutes ago, segments archived a minute
    apart from then on (number 5 missing), as the last check recorded them."""
    row = factories.host()
    cluster = factories.cluster(row)
    taken = timezone.now() - timedelta(minutes=10)
    factories.snapshots(row, created_at=taken)
    start = taken.timestamp()
    segments = [[n, start + 60 * (n - 1)] for n in (2, 3, 4, 6, 7)]
    WalArchive.objects.create(
        cluster=cluster, dataset="tank/pozol_wal/pg:data", directory="/tank/pozol_wal/pg:data",
        state=WalArchive.State.ON, checked_at=timezone.now(), segment_size=SIZE,
        listing={"timeline": 1, "segments": segments}, archive_timeout=60)
    return row, taken


def make(api, on, **changes):
    body = {"cluster": on.clusters.get().pk, "name": "pitr", **changes}
    return api.post("/api/clones/", body, format="json")


def test_a_moment_in_the_window_clones_the_snapshot_before_it_with_a_replay(api, host):
    row, taken = host
    moment = (taken + timedelta(minutes=2)).isoformat()
    answer = make(api, row, at=moment)
    assert answer.status_code == 202, answer.content
    clone = Clone.objects.get()
    assert clone.snapshot == factories.SNAPSHOT and clone.point_in_time
    assert clone.target_time.isoformat() == datetime.fromisoformat(moment).isoformat()
    layout = clone.decoded_layout()
    assert layout.recovery == Recovery("tank/pozol_wal/pg:data", "pozol-pitr-pitr", "time",
                                       datetime.fromisoformat(moment).isoformat())
    assert Operation.objects.get().state["take_snapshot"] is False
    assert answer.json()["clone"]["target_time"]


@pytest.mark.parametrize(("moment", "status", "words"), [
    (timedelta(days=1), 400, "in the future"),
    (timedelta(minutes=-30), 400, "outside the recoverable window: any moment from"),
    (timedelta(minutes=4), 400, "past a gap in the archive (missing 000000010000000000000005"),
])
def test_moments_outside_the_window_are_refused_with_it(api, host, moment, status, words):
    row, taken = host
    base = timezone.now() if moment > timedelta(hours=1) else taken
    answer = make(api, row, at=(base + moment).isoformat())
    assert answer.status_code == status, answer.content
    error = answer.json()["error"]
    assert words in error["message"] and "at" in error["fields"]
    assert not Clone.objects.exists() and not Operation.objects.exists()


@pytest.mark.parametrize("body", [
    {"at": "2026-11-20T14:06:00"}, {"at": "yesterday"}, {"at": 1800000000},
    {"at": "2026-13-01T00:00:00Z"}, {"lsn": "0/"}, {"lsn": "$(reboot)"},
    {"lsn": "1/2\n"}, {"lsn": 12}, {"at": "2026-11-20T14:06:00Z", "lsn": "0/1"},
    {"at": "2026-11-20T14:06:00Z", "snapshot": factories.SNAPSHOT}])
def test_bad_moments_are_a_400_naming_the_field(api, host, body):
    answer = make(api, host[0], **body)
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["fields"]
    assert not Clone.objects.exists()


def test_an_lsn_needs_a_marked_snapshot_and_must_be_archived(api, host):
    row, _ = host
    answer = make(api, row, lsn="0/9000000")
    assert answer.status_code == 400 and "beyond the end of the archive" in answer.json()[
        "error"]["message"]
    answer = make(api, row, lsn="0/3000010")
    assert answer.status_code == 400 and "known WAL position" in answer.json()["error"][
        "message"]
    archive = WalArchive.objects.get()
    archive.marks.create(snapshot=factories.SNAPSHOT, lsn="0/2000100",
                         taken_at=timezone.now())
    answer = make(api, row, lsn="0/3000010")
    assert answer.status_code == 202, answer.content
    assert Clone.objects.get().decoded_layout().recovery.value == "0/3000010"


def test_a_cluster_not_archiving_is_a_409(api, host):
    WalArchive.objects.update(state=WalArchive.State.OFF)
    answer = make(api, host[0], at=timezone.now().isoformat())
    assert answer.status_code == 409
    assert answer.json()["error"]["code"] == "not_archiving"


def test_the_script_replays_promotes_and_says_where_it_stopped(host):
    row, taken = host
    layout = Layout.from_stored(_stored(row))
    script = commands.create(layout, "p" * 24).text
    assert "recovery_target_time = '" in script and "recovery.signal" in script
    assert "zfs clone -p" in script and "tank/pozol_wal/pg:data@pozol-pitr-pitr" in script
    assert "restore_command = 'cp %s/%%f %%p'" in script
    assert "pg_last_xact_replay_timestamp" in commands.create(layout, "p" * 24).stdin.decode()
    assert "tank/pozol_wal/pg:data@pozol-pitr-pitr" in commands.destroy(layout).text
    assert commands.reached("x\npozol-reached|1800000000.5\n") == 1800000000.5
    assert commands.reached("pozol-reached|\n") is None


def test_on_a_replication_target_the_received_archive_snapshot_is_cloned_never_taken(host):
    """A replay on a link's target clones the snapshot the link sent: taking one there
    would make the copy diverge, and destroying it would undo the link's work."""
    row, taken = host
    stored = _stored(row)
    stored["recovery"] |= {"archive": "backup/pozol_wal/pg:data",
                           "label": "pozol-carry-l-20261128T120000", "received": True}
    layout = Layout.from_stored(stored)
    snapshot = "backup/pozol_wal/pg:data@pozol-carry-l-20261128T120000"
    script = commands.create(layout, "p" * 24).text
    assert f"zfs clone -p -o pozol:clone=pitr {snapshot}" in script
    assert f"zfs snapshot {snapshot}" not in script and f"zfs destroy {snapshot}" not in script
    assert "is not on this host" in script
    assert snapshot not in commands.destroy(layout).text
    assert Layout.from_stored(layout.stored()) == layout


def _stored(row) -> dict:
    clone = factories.clone(row)
    stored = Layout.from_stored({
        "origin": {"data_dataset": "tank/pg/data", "data_mountpoint": "/tank/pg/data",
                   "data_dir": "/tank/pg/data/pgdata"},
        "name": "pitr", "snapshot": clone.snapshot, "port": 6500, "listen": "127.0.0.1",
        "allowed": [], "role": "dev", "socket_dir": "/run/pozol/clones/pitr",
        "os_uid": 1_900_006_500,
        "recovery": {"archive": "tank/pozol_wal/pg:data", "label": "pozol-pitr-pitr",
                     "target": "time", "value": "2026-11-20T14:06:00+00:00"}}).stored()
    return stored


@pytest.mark.parametrize("value", ["2026-11-20 14:06:00", "'; DROP", "0/1", "now"])
def test_only_targets_pozol_writes_reach_the_settings(value):
    with pytest.raises(CloneError):
        Recovery("tank/pozol_wal/pg:data", "pozol-pitr-x", "time", value)
    with pytest.raises(CloneError):
        Recovery("tank/pozol_wal/pg:data", "pozol-pitr-x", "lsn", "0/1; x")
    assert Recovery("t/a", "l", "lsn", "16/B374D848").settings()["recovery_target_lsn"]


def test_a_replay_to_the_archives_end_writes_no_target():
    latest = Recovery("t/a", "l", "latest", "latest", received=True)
    assert latest.settings() == {"recovery_target_timeline": "current"}
    assert latest.describe() == "the end of the archive"
    with pytest.raises(CloneError):
        Recovery("t/a", "l", "latest", "2026-11-20T14:06:00+00:00")


def test_a_note_when_the_moment_reached_is_far_from_the_one_asked():
    asked = datetime(2026, 11, 20, 14, 6, tzinfo=UTC)
    clone = Clone(target_time=asked, reached_at=asked - timedelta(seconds=30),
                  archive_timeout=60)
    assert clone.reached_note == ""
    clone.reached_at = asked - timedelta(minutes=5)
    assert "300 s before the moment asked" in clone.reached_note


def test_the_operators_form_takes_a_moment(client, operator, host):
    row, taken = host
    client.force_login(operator)
    page = f"/clones/hosts/{row.pk}/new/"
    base = {"cluster": row.clusters.get().pk, "snapshot": "", "name": "pitr", "role": "dev"}
    for bad, words in (("2026-11-20T14:06:00", b"time zone"), ("2026-13-01T00:00:00Z",
                                                                b"Not a moment"),
                       ((taken - timedelta(hours=1)).isoformat(), b"recoverable window")):
        answer = client.post(page, {**base, "at": bad})
        assert answer.status_code == 200 and words in answer.content, bad
    answer = client.post(page, {**base, "at": (taken + timedelta(minutes=2)).isoformat()})
    assert answer.status_code == 302
    assert Clone.objects.get().target_time is not None


def test_a_restore_point_pozol_made_is_served_as_its_time(api, host):
    row, taken = host
    answer = make(api, row, restore_point="before-migration")
    assert answer.status_code == 400 and "no restore point named" in answer.json()["error"][
        "message"]
    archive = WalArchive.objects.get()
    archive.restore_points.create(name="before-migration", lsn="0/3000100",
                                  created_at=taken + timedelta(minutes=2))
    answer = make(api, row, restore_point="before-migration")
    assert answer.status_code == 202, answer.content
    clone = Clone.objects.get()
    assert clone.target_name == "before-migration" and clone.target_time
    assert clone.decoded_layout().recovery.settings()["recovery_target_name"] == (
        "before-migration")
    for bad in ("a b", "'x", "-x", "x" * 64, ""):
        assert make(api, row, name="other", restore_point=bad).status_code == 400


def test_restore_points_are_made_by_an_operation(api, host):
    archive = WalArchive.objects.get()
    answer = api.post(f"/api/wal-archives/{archive.pk}/restore-points/",
                      {"name": "release-42"}, format="json")
    assert answer.status_code == 202, answer.content
    assert Operation.objects.get().kind == "wal.restore_point"
    for bad in ({"name": "a;b"}, {"name": ""}, {}, {"name": 5}):
        assert api.post(f"/api/wal-archives/{archive.pk}/restore-points/", bad,
                        format="json").status_code == 400
