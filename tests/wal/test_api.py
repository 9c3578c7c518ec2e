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
