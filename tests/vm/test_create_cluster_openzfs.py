"""A cluster created through the API on the OpenZFS host as Debian's packaged cluster of
its major (issue 24 §1): pg_createcluster makes it on PoZoL's datasets, its systemd unit
starts it (and would at boot), the existing snapshot, clone, replication and restore drill
features take it as they are (the link goes from the guest to itself under its second
name: two OpenZFS ends), and it is dropped with its datasets (pg_dropcluster, then zfs
destroy). With the host's own 17/main stopped, PostgreSQL 17 is still offered:
discovery finds its packaged binaries, and a second cluster made then is retired the
other way, kept (stopped, no longer started at boot, its datasets and a final snapshot
left; the fixture drops it afterwards)."""

from __future__ import annotations

import shlex
import time

import pytest

from apps.fleet import services as fleet
from apps.ops.models import Operation
from apps.replication import services as replication
from apps.snapshots import services as snapshot_services
from tests.driving import drive
from tests.integration.test_drills import drill, leftovers
from tests.integration.test_replication import run_link
from tests.vm.conftest import run_on
from tests.vm.test_openzfs_host import discovered
from tests.vm.test_replication_openzfs import cleanup, snapshots_of

pytestmark = [pytest.mark.vm, pytest.mark.django_db(transaction=True)]
COPIES = "tank/orders_copies"


def create(api, host, name: str):
    answer = api.post(f"/api/hosts/{host.pk}/clusters/", {"major": 17, "name": name},
                      format="json")
    assert answer.status_code == 202, answer.content
    operation = drive(Operation.objects.get(pk=answer.json()["operation"]["id"]), limit=600)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    return host.clusters.get(pk=operation.result["cluster"]), answer.json()["plan"]


def as_owner(vm_host, cluster, sql: str) -> str:
    return run_on(vm_host, f"cd / && runuser -u postgres -- psql -X -At -p {cluster.port} "
                           f"-d postgres -c \"{sql}\"").strip()


def retire(api, host, cluster, **body) -> Operation:
    answer = api.post(f"/api/hosts/{host.pk}/retire-cluster/",
                      {"cluster": cluster.pk, "stop": True, **body}, format="json")
    assert answer.status_code == 202, answer.content
    operation = drive(Operation.objects.get(pk=answer.json()["id"]), limit=300)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    return operation


@pytest.fixture
def dropped_after(vm_host):
    """The clusters the test makes are gone afterwards, whatever happened: the VM host is
    shared by the group."""
    yield
    cleanup(vm_host, COPIES)
    run_on(vm_host, "for c in orders spare hidden; do [ ! -d /etc/postgresql/17/$c ] || "
                    "pg_dropcluster --stop 17 $c; done; "
                    "! zfs list tank/postgres > /dev/null 2>&1 || zfs destroy -r tank/postgres; "
                    "systemctl start postgresql@17-main")


def cloned_through_the_api(api, vm_host, host, cluster, snapshot: str) -> None:
    """A customer's clone of the new cluster: ready, holding its rows, destroyed."""
    made = api.post("/api/clones/", {"host": host.pk, "cluster": cluster.pk,
                                     "snapshot": snapshot, "name": "ordersclone"},
                    format="json")
    assert made.status_code == 202, made.content
    answer = made.json()
    operation = drive(Operation.objects.get(pk=answer["operation"]["id"]), limit=600)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    shown = api.get(f"/api/clones/{answer['clone']['id']}/").json()
    url = shown["connection_string"].replace(f"{shown['role']}@",
                                             f"{shown['role']}:{answer['password']}@")
    # Inside the guest: only its sshd is forwarded to this machine.
    assert run_on(vm_host, f"cd / && psql {shlex.quote(url)} -XAt -c "
                           "'SELECT count(*) FROM made'").strip() == "24"
    gone = api.delete(f"/api/clones/{shown['id']}/")
    assert gone.status_code == 202, gone.content
    assert drive(Operation.objects.get(pk=gone.json()["id"]), limit=300).status == \
        Operation.Status.SUCCEEDED
    assert leftovers(vm_host, "ordersclone") == ""


def replicated(vm_host, vm_second_name, host, cluster, snapshot: str) -> None:
    """A link of the new cluster to the guest under its second name: a full send lands
    its data and WAL datasets with the snapshot; deleting the link releases its holds."""
    target = discovered(vm_second_name)
    link = replication.create_link(name="orders-copy", source_host=host, target_host=target,
                                   target_parent=COPIES, cluster_data_dir=cluster.data_dir,
                                   interval_minutes=0)
    sent = run_link(link)
    assert sent.status == Operation.Status.SUCCEEDED, sent.error
    assert sent.result["action"] == "full"
    for copy in (f"{COPIES}/orders/data", f"{COPIES}/orders/wal"):
        assert snapshot in snapshots_of(vm_host, copy), copy
    removed = drive(replication.delete_link(link), limit=300)
    assert removed.status == Operation.Status.SUCCEEDED, removed.error


def test_a_packaged_cluster_is_created_snapshotted_cloned_replicated_drilled_and_retired(
        vm_host, vm_second_name, api, delivered, dropped_after):
    host = discovered(vm_host)
    taken = api.post(f"/api/hosts/{host.pk}/clusters/", {"major": 17, "name": "main"},
                     format="json")
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "cluster_exists"

    cluster, plan = create(api, host, "orders")
    assert plan["packaged"] and plan["unit"] == "postgresql@17-orders.service"
    assert plan["initdb"][0] == "pg_createcluster"
    assert cluster.packaged_as == "17/orders" and cluster.pg_ctlcluster
    assert cluster.systemd_unit == "postgresql@17-orders.service" and cluster.running
    assert cluster.config_file == "/etc/postgresql/17/orders/postgresql.conf"
    assert cluster.data_dataset.name == "tank/postgres/orders/data"
    assert run_on(vm_host, "systemctl is-active postgresql@17-orders").strip() == "active"
    listed = run_on(vm_host, "pg_lsclusters -h").split("\n")
    assert any(line.split()[:3] == ["17", "orders", str(cluster.port)] for line in listed)
    assert run_on(vm_host, "grep -v '^#' /etc/postgresql/17/orders/start.conf").strip() == "auto"
    assert as_owner(vm_host, cluster, "show data_checksums") == "on"
    assert run_on(vm_host, f"readlink -f {cluster.data_dir}/pg_wal").strip() == \
        "/tank/postgres/orders/wal/pg_wal"
    assert run_on(vm_host, "zfs get -H -o value recordsize tank/postgres/orders/data"
                  ).strip() == "16K"
    as_owner(vm_host, cluster, "CREATE TABLE made AS SELECT generate_series(1, 24) AS id")

    time.sleep(1.1)  # snapshot names and creation times have a one-second resolution
    snapshot = drive(snapshot_services.snapshot_now(host, cluster=cluster))
    assert snapshot.status == Operation.Status.SUCCEEDED, snapshot.error
    name = snapshot.state["snapshot"]
    assert f"tank/postgres/orders/data@{name}" in run_on(
        vm_host, "zfs list -H -t snapshot -o name -r tank/postgres/orders")
    cloned_through_the_api(api, vm_host, host, cluster, name)
    replicated(vm_host, vm_second_name, host, cluster, name)
    schedule = api.post("/api/drill-schedules/", {"host": host.pk, "cluster": cluster.pk},
                        format="json")
    assert schedule.status_code == 201, schedule.content
    passed = drill(api, schedule.json()["id"])
    assert passed["status"] == "passed", (passed["error"], passed["log_tail"])
    assert leftovers(vm_host, "pozol-drill") == ""
    assert api.delete(f"/api/drill-schedules/{schedule.json()['id']}/").status_code == 204

    retired = retire(api, host, cluster, datasets="destroy")
    assert retired.result["destroyed"] == ["tank/postgres/orders"]
    assert "orders" not in run_on(vm_host, "pg_lsclusters -h")
    assert run_on(vm_host, "test -e /etc/postgresql/17/orders && echo there || true"
                  ).strip() == ""
    assert "tank/postgres/orders" not in run_on(vm_host, "zfs list -H -o name -r tank")
    # The host's own cluster is untouched.
    assert run_on(vm_host, "systemctl is-active postgresql@17-main").strip() == "active"
    made_with_no_cluster_running(api, vm_host, host)


def made_with_no_cluster_running(api, vm_host, host) -> None:
    """With 17/main stopped, no postmaster tells discovery of PostgreSQL 17: its packaged
    initdb does, and postgresql-common's start.conf keeps the stopped name taken."""
    run_on(vm_host, "systemctl stop postgresql@17-main")
    found = drive(fleet.discover(host), limit=300)
    assert found.status == Operation.Status.SUCCEEDED, found.error
    host.refresh_from_db()
    assert not host.clusters.filter(running=True).exists()
    assert host.facts["installed"]["bin_dirs"] == {"17": "/usr/lib/postgresql/17/bin"}
    taken = api.post(f"/api/hosts/{host.pk}/clusters/", {"major": 17, "name": "main"},
                     format="json")
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "cluster_exists"
    # A stopped cluster PoZoL never saw holds a port: the host is asked before anything.
    run_on(vm_host, "pg_createcluster 17 hidden -p 5440 > /dev/null")
    clash = api.post(f"/api/hosts/{host.pk}/clusters/", {"major": 17, "name": "clash",
                                                         "port": 5440}, format="json")
    assert clash.status_code == 202, clash.content
    failed = drive(Operation.objects.get(pk=clash.json()["operation"]["id"]), limit=300)
    assert failed.status == Operation.Status.FAILED
    assert "port 5440 is taken by a cluster postgresql-common knows" in failed.error
    assert "tank/postgres/clash" not in run_on(vm_host, "zfs list -H -o name -r tank")
    run_on(vm_host, "pg_dropcluster 17 hidden")
    spare, plan = create(api, host, "spare")
    assert plan["packaged"] and plan["initdb"][:3] == ["pg_createcluster", "17", "spare"]
    assert plan["owner"] == "postgres" and plan["bin_dir"] == "/usr/lib/postgresql/17/bin"
    assert plan["port"] != 5432  # the stopped 17/main's, which PoZoL still knows
    assert run_on(vm_host, "systemctl is-active postgresql@17-spare").strip() == "active"
    assert as_owner(vm_host, spare, "show data_checksums") == "on"
    retired = retire(api, host, spare, final_snapshot=True)
    assert retired.result["destroyed"] == [] and retired.result["snapshot"]
    assert run_on(vm_host, "systemctl is-active postgresql@17-spare || true").strip() != "active"
    assert run_on(vm_host, "cat /etc/postgresql/17/spare/start.conf").strip() == "manual"
    assert "tank/postgres/spare/data" in run_on(vm_host, "zfs list -H -o name -r tank")
    run_on(vm_host, "systemctl start postgresql@17-main")
