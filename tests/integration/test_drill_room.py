"""Restore drills and table recoveries cannot starve production either (issue 19 §2),
on a real test host: their clones get the host's ZFS quota (read on the host with plain
zfs just before the clone is destroyed), and their step reads the pool again before it
clones, so a pool that filled since discovery fails the run with the figures and
nothing is cloned."""

from __future__ import annotations

import pytest

from apps.clones import services as clone_services
from apps.clones.core.layout import CLONE_FIRST_WRITES
from apps.drills import steps
from apps.fleet import reserves
from apps.ops.models import Operation
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_clone_room import FILL, sync
from tests.integration.test_drills import drill, host, leftovers, snapshot_now  # noqa: F401
from tests.integration.test_recover_table import INTO, TABLE, dropped  # noqa: F401
from tests.integration.test_snapshots import destroy, psql

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

MiB = 2**20
QUOTA = 96 * MiB


@pytest.fixture
def quotas_seen(monkeypatch, host):  # noqa: F811
    """The quota of each drill or recovery clone, read on the host before its destroy."""
    fleet_host, _ = host
    seen: list[str] = []
    original = steps._destroy

    def destroy_after_reading(ssh, layout, times):
        seen.append(run_on(fleet_host, f"zfs get -Hp -o value quota {layout.root} "
                                       "2>/dev/null || echo none").strip())
        return original(ssh, layout, times)

    monkeypatch.setattr(steps, "_destroy", destroy_after_reading)
    return seen


def small_quota(row) -> None:
    clone_services.update_settings(row, port_min=6500, port_max=6599, listen_address=None,
                                   allowed_networks=[], clone_quota=QUOTA)


def filled_since_discovery(fleet_host, row) -> None:
    """A reserve discovery's figures keep, then 80 MiB written: the host's reading no
    longer does."""
    free = row.datasets.get(name="tank").available
    needed = min(QUOTA, CLONE_FIRST_WRITES)
    reserves.set_reserve(row, "tank", reserve_bytes=free - needed - 40 * MiB)
    run_on(fleet_host, f"zfs create -o compression=off {FILL} && dd if=/dev/urandom "
                       f"of=$(zfs get -H -o value mountpoint {FILL})/blob bs=1M count=80 "
                       "status=none")
    sync(fleet_host)


def test_a_drills_clone_has_the_quota_and_its_step_checks_the_room(api, host, quotas_seen):  # noqa: F811
    fleet_host, row = host
    small_quota(row)
    snapshot_now(row)
    created = api.post("/api/drill-schedules/", {"host": row.pk,
                                                 "cluster": row.clusters.get().pk},
                       format="json")
    schedule = created.json()["id"]
    passed = drill(api, schedule)
    assert passed["status"] == "passed", passed["error"]
    assert quotas_seen == [str(QUOTA)]

    try:
        filled_since_discovery(fleet_host, row)
        refused = drill(api, schedule)
        assert refused["status"] == "failed"
        assert refused["error"].startswith("refused: pool tank has "), refused["error"]
        assert "a restore drill may need 96.0 MiB" in refused["error"]
        assert "keeps a reserve of" in refused["error"]
        assert leftovers(fleet_host, "pozol-drill") == ""
    finally:
        destroy(fleet_host, FILL)


def test_a_table_recoverys_clone_has_the_quota_and_its_step_checks_the_room(
        api, dropped, host, quotas_seen):  # noqa: F811
    fleet_host, snapshot = dropped
    _, row = host
    small_quota(row)
    body = {"database": "postgres", "table": TABLE, "into": INTO}
    response = api.post(f"/api/snapshots/{snapshot.pk}/recover-table/", body, format="json")
    assert response.status_code == 202, response.content
    operation = drive(Operation.objects.get(pk=response.json()["id"]))
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert quotas_seen == [str(QUOTA)]
    psql(fleet_host, f"DROP TABLE {INTO}")

    try:
        filled_since_discovery(fleet_host, row)
        response = api.post(f"/api/snapshots/{snapshot.pk}/recover-table/", body,
                            format="json")
        assert response.status_code == 202, response.content
        operation = drive(Operation.objects.get(pk=response.json()["id"]))
        assert operation.status == Operation.Status.FAILED
        assert operation.error_code == "no_room", operation.error
        assert "a table recovery may need 96.0 MiB" in operation.error
        assert leftovers(fleet_host, "pozol-recover") == ""
        assert quotas_seen == [str(QUOTA)]  # no second clone
        assert psql(fleet_host, f"SELECT to_regclass('{INTO}') IS NULL") == "t"
    finally:
        destroy(fleet_host, FILL)
