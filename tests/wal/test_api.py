"""The WAL archives API and pages without a host: the plan (dry_run) changes nothing, an
enable starts one operation, bad input is a 400 naming the field, a second enable or a
disable of what is not on is a 409; the host page's WAL tab and the plan pages render."""

import pytest

from apps.ops.models import Operation
from apps.wal.models import WalArchive
from tests.clones import factories

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def cluster():
    row = factories.host()
    made = factories.cluster(row)
    made.settings = [{"name": "archive_mode", "setting": "off"},
                     {"name": "archive_command", "setting": ""},
                     {"name": "archive_timeout", "setting": "0"}]
    made.save()
    return made


def test_the_plan_changes_nothing_and_enable_starts_one_operation(api, cluster):
    answer = api.post("/api/wal-archives/", {"cluster": cluster.pk, "dry_run": True},
                      format="json")
    assert answer.status_code == 200, answer.content
    plan = answer.json()
    assert plan["dataset"] == "tank/pozol_wal/pg:data" and plan["restart"] is True
    assert [c["after"] for c in plan["changes"]][0::2] == ["on", "60"]
    assert not WalArchive.objects.exists() and not Operation.objects.exists()

    answer = api.post("/api/wal-archives/", {"cluster": cluster.pk, "archive_timeout": 120},
                      format="json")
    assert answer.status_code == 202, answer.content
    operation = Operation.objects.get(pk=answer.json()["operation"])
    assert operation.kind == "wal.enable" and operation.mutating
    assert answer.json()["archive"]["state"] == "enabling"
    again = api.post("/api/wal-archives/", {"cluster": cluster.pk}, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "enabling"
    archive = WalArchive.objects.get()
    assert api.post(f"/api/wal-archives/{archive.pk}/disable/", {},
                    format="json").status_code == 409
    assert api.get(f"/api/wal-archives/{archive.pk}/").json()["window"] == []


@pytest.mark.parametrize("body", [
    {"cluster": 999999}, {"cluster": "1"}, {}, {"archive_timeout": 60},
    {"cluster": "C", "archive_timeout": 5}, {"cluster": "C", "archive_timeout": 4000},
    {"cluster": "C", "archive_timeout": "60"}, {"cluster": "C", "archive_timeout": True},
    {"cluster": "C", "dry_run": "yes"}])
def test_bad_input_is_a_400_naming_the_field(api, cluster, body):
    body = {k: cluster.pk if v == "C" else v for k, v in body.items()}
    answer = api.post("/api/wal-archives/", body, format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["fields"]
    assert not Operation.objects.exists()


def test_a_cluster_down_or_off_zfs_is_refused(api, cluster):
    cluster.running = False
    cluster.save()
    answer = api.post("/api/wal-archives/", {"cluster": cluster.pk}, format="json")
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "cluster_down"
    cluster.running, cluster.data_dataset = True, None
    cluster.save()
    answer = api.post("/api/wal-archives/", {"cluster": cluster.pk}, format="json")
    assert answer.status_code == 400 and "not on a ZFS dataset" in answer.json()["error"][
        "message"]


def test_the_pages_show_the_plan_and_the_tab(client, operator, cluster):
    client.force_login(operator)
    page = client.get(f"/hosts/{cluster.host_id}/wal/")
    assert page.status_code == 200 and b"Turn on" in page.content
    plan = client.get(f"/wal/clusters/{cluster.pk}/enable/?archive_timeout=90")
    assert plan.status_code == 200 and b"restarted" in plan.content and b"90" in plan.content
    bad = client.get(f"/wal/clusters/{cluster.pk}/enable/?archive_timeout=1")
    assert bad.status_code == 200 and b"Turn archiving on" not in bad.content
    started = client.post(f"/wal/clusters/{cluster.pk}/enable/", {"archive_timeout": 90})
    assert started.status_code == 302
    assert WalArchive.objects.get().archive_timeout == 90


def test_the_plan_page_says_why_a_cluster_cannot_archive(client, operator, cluster):
    cluster.data_dataset = None
    cluster.save()
    client.force_login(operator)
    page = client.get(f"/wal/clusters/{cluster.pk}/enable/")
    assert page.status_code == 200 and b"not on a ZFS dataset" in page.content
    assert b"Turn archiving on" not in page.content


LONG = "/" + "m" * 300  # its archive command would pass PostgreSQL 15's 1023 bytes


@pytest.mark.parametrize("mountpoint", [LONG, "/my pool"])
def test_a_pool_mounted_where_no_archive_command_would_hold_is_a_400(api, cluster,
                                                                     mountpoint):
    cluster.host.datasets.filter(name="tank").update(mountpoint=mountpoint)
    for body in ({"cluster": cluster.pk, "dry_run": True}, {"cluster": cluster.pk}):
        answer = api.post("/api/wal-archives/", body, format="json")
        assert answer.status_code == 400, answer.content
        message = answer.json()["error"]["message"]
        assert f"the archive would be mounted at {mountpoint}/pozol_wal/pg:data" in message
        assert ("1023 bytes" if mountpoint == LONG else "are allowed") in message
    assert not WalArchive.objects.exists() and not Operation.objects.exists()


def test_an_archive_in_a_directory_too_long_now_cannot_be_refreshed(api, cluster):
    """An older PoZoL enabled it there; its refresh says why not, rather than fail on
    the host, and the read still calls its command outdated."""
    from apps.wal.core.commands import Status
    from apps.wal.inspection import outdated_command

    archive = WalArchive.objects.create(cluster=cluster, dataset="tank/pozol_wal/pg:data",
                                        directory=f"{LONG}/pozol_wal/pg:data",
                                        state=WalArchive.State.ON, command_outdated=True)
    answer = api.post(f"/api/wal-archives/{archive.pk}/refresh-command/")
    assert answer.status_code == 409, answer.content
    assert answer.json()["error"]["code"] == "bad_directory"
    assert "turn archiving off" in answer.json()["error"]["message"]
    assert not Operation.objects.exists()
    status = Status(archiver=None, used=None, available=None, mountpoint=archive.directory,
                    archived=[], archive_command="cp %p /somewhere/%f")
    assert outdated_command(archive, status) is True
