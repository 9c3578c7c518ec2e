"""Identities that hold, on real test hosts: discovery after discovery keeps every id
(a clone asked for with a cluster id read before them is made), a running clone is
PoZoL's copy and not a cluster of the host, and a stopped cluster keeps its id,
opens cluster_down, is "down" to its tenant (whose clone request is refused saying
so) and is running again, the alert resolved, once it is started."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.fleet import services
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.tenants import services as tenant_services
from tests.driving import drive
from tests.integration.conftest import register, run_on
from tests.integration.test_clones import host  # noqa: F401  the fixture
from tests.tenants import factories as tenants

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def _ids(row: Host) -> dict[str, list]:
    return {name: sorted(getattr(row, name).values_list("pk", flat=True))
            for name in ("pools", "datasets", "clusters", "disks")}


def _discover(row: Host) -> None:
    operation = drive(services.discover(row))
    assert operation.status == Operation.Status.SUCCEEDED, operation.error


def _listed(api, row: Host) -> list[tuple[int, str, bool]]:
    response = api.get(f"/api/hosts/{row.pk}/clusters/")
    assert response.status_code == 200, response.content
    return [(c["id"], c["data_dir"], c["running"]) for c in response.json()["results"]]


def test_ids_hold_over_five_discoveries_and_a_running_clone_is_no_cluster(api, host):  # noqa: F811
    fleet_host, row = host
    before = _ids(row)
    [(cluster_id, data_dir, _)] = _listed(api, row)
    for _ in range(5):
        _discover(row)
    assert _ids(row) == before

    response = api.post("/api/clones/", {"cluster": cluster_id, "name": "ids1"}, format="json")
    assert response.status_code == 202, response.content
    made = drive(Operation.objects.get(pk=response.json()["operation"]["id"]))
    assert made.status == Operation.Status.SUCCEEDED, made.error
    assert "pozol_clones/ids1" in run_on(fleet_host, "ps -eo args")  # its postmaster runs

    _discover(row)
    row.refresh_from_db()
    assert _listed(api, row) == [(cluster_id, data_dir, True)]
    assert [d for d in row.facts["clones"] if "pozol_clones/ids1/" in d]  # seen, set apart
    assert all("pozol_clones" not in c["data_dir"] for c in row.facts["clusters"])
    assert _ids(row)["clusters"] == before["clusters"]


def test_a_stopped_cluster_is_down_to_its_tenant_and_back_once_started(fleet_hosts, delivered,
                                                                         client):
    fleet_host = fleet_hosts[1]
    pg_ctl = (f"runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/pg_ctl "
              f"-D {fleet_host.pg_data_dir} -w")
    row = register(fleet_host)
    assert drive(row.operations.get()).status == Operation.Status.SUCCEEDED
    cluster = row.clusters.get()
    tenant = tenants.tenant("acme")
    tenant_services.assign_cluster(tenant, row, cluster.data_dir)
    alice = tenants.member(tenant, "alice")
    member = tenants.api_as(alice)
    client.force_login(alice)

    run_on(fleet_host, f"{pg_ctl} -m fast stop")
    try:
        _discover(row)
        alert = row.alerts.get(kind="cluster_down", resolved_at=None)
        assert cluster.data_dir in alert.message
        down = row.clusters.get()
        assert (down.pk, down.running, down.last_seen_at) == (
            cluster.pk, False, cluster.last_seen_at)
        [assignment] = member.get("/api/cluster-assignments/").json()["results"]
        assert (assignment["cluster"], assignment["cluster_state"]) == (cluster.pk, "down")
        refused = member.post("/api/clones/", {"cluster": cluster.pk}, format="json")
        assert refused.status_code == 409, refused.content
        error = refused.json()["error"]
        assert error["code"] == "cluster_down" and "your cluster is down" in error["message"]
        page = client.get(reverse("clones:cluster", args=[assignment["id"]])).content.decode()
        assert 'id="cluster-down"' in page and "Your cluster is down" in page
        assert '<span class="badge bad">down</span>' in client.get(
            reverse("clones:mine")).content.decode()
    finally:
        run_on(fleet_host, f"{pg_ctl} -l {fleet_host.pg_log_file} start")

    _discover(row)
    back = row.clusters.get()
    assert (back.pk, back.running) == (cluster.pk, True)
    assert not row.alerts.filter(kind="cluster_down", resolved_at=None).exists()
    [assignment] = member.get("/api/cluster-assignments/").json()["results"]
    assert assignment["cluster_state"] == "running"
