"""A cluster made through the API on a real test host by a real Celery worker: its
datasets carry the planned properties before the first write, it answers queries with
checksums on, the existing snapshot feature snapshots it (one `zfs snapshot -r` of its
parent), the clone feature clones that snapshot (retiring is refused meanwhile), a
restore drill passes on it and a replication link sends it to a second host, all
through the API with no step by hand; and it is retired twice over: with a final
snapshot (its datasets kept), and stopped with its datasets destroyed. A retired
cluster stays retired when a discovery that read the host before the retire records
after it; one that reads the host later records it again once it runs again."""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from django.utils import timezone

from apps.demo.fleet import down, up
from apps.fleet.models import Host
from apps.fleet.steps import NOT_RECORDED, record_facts
from apps.ops.models import Operation
from apps.remote import ssh
from apps.remote.gather import discover
from tests.conftest import TEST_FLEET_SUBNET
from tests.integration.conftest import register, run_on
from tests.workers import Worker

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

# Far above the session fleet's hosts and the other modules' own (18, 21, 22).
INDEX = 24


@pytest.fixture(scope="module")
def fleet_hosts():
    """The cluster's host (.24) and a link's target (.25)."""
    state_dir = Path(tempfile.mkdtemp(prefix="pozol-test-create-"))
    try:
        yield up(2, state_dir=state_dir, subnet=TEST_FLEET_SUBNET, first=INDEX)
    finally:
        down(state_dir)


@pytest.fixture(scope="module")
def fleet_host(fleet_hosts):
    return fleet_hosts[0]


@pytest.fixture
def worker(tmp_path):
    worker = Worker("pozol", "create", tmp_path)
    yield worker
    worker.stop()


def finished(operation_id: int, worker: Worker, timeout: float = 240) -> Operation:
    deadline = time.monotonic() + timeout
    while True:
        operation = Operation.objects.get(pk=operation_id)
        if not operation.is_active:
            break
        assert time.monotonic() < deadline, f"{operation} did not end: {operation.message}"
        time.sleep(0.5)
    log = "\n".join(line.text for line in operation.log_lines.all())
    assert operation.status == Operation.Status.SUCCEEDED, (operation.error, log,
                                                            worker.output()[-3000:])
    return operation


def sql(fleet_host, cluster, text: str) -> str:
    return run_on(fleet_host, (
        f"cd / && runuser -u {cluster.owner} -- {cluster.bin_dir}/psql -X -At "
        f"-v ON_ERROR_STOP=1 -h {cluster.socket_dir} -p {cluster.port} -d postgres "
        f"-c \"{text}\"")).strip()


def create(api, host: Host, worker: Worker, name: str, **extra):
    answer = api.post(f"/api/hosts/{host.pk}/clusters/", {"major": 15, "name": name, **extra},
                      format="json")
    assert answer.status_code == 202, answer.content
    operation = finished(answer.json()["operation"]["id"], worker)
    return host.clusters.get(pk=operation.result["cluster"]), answer.json()["plan"]


def drilled(api, host: Host, cluster, worker: Worker) -> None:
    made = api.post("/api/drill-schedules/", {"host": host.pk, "cluster": cluster.pk},
                    format="json")
    assert made.status_code == 201, made.content
    started = api.post(f"/api/drill-schedules/{made.json()['id']}/run/")
    assert started.status_code == 202, started.content
    finished(started.json()["operation"], worker, timeout=300)
    run = api.get(f"/api/drills/{started.json()['id']}/").json()
    assert run["status"] == "passed", (run["error"], run["log_tail"])
    assert api.delete(f"/api/drill-schedules/{made.json()['id']}/").status_code == 204


def replicated(api, fleet_hosts, host: Host, cluster, snapshot: str, worker: Worker) -> None:
    """A link to the second host: a full send lands the snapshot of data and WAL there;
    deleting the link releases its holds (the retire below destroys the datasets)."""
    target = register(fleet_hosts[1])
    finished(target.operations.get().pk, worker)
    made = api.post("/api/replication-links/", {
        "name": "orders-copy", "source_host": host.pk, "target_host": target.pk,
        "target_parent": "tank/copies", "cluster_data_dir": cluster.data_dir},
        format="json")
    assert made.status_code == 201, made.content
    link = made.json()["id"]
    sent = api.post(f"/api/replication-links/{link}/run/")
    assert sent.status_code == 202, sent.content
    assert finished(sent.json()["id"], worker, timeout=300).result["action"] == "full"
    received = run_on(fleet_hosts[1], "zfs list -H -t snapshot -o name -r tank/copies")
    for copy in ("tank/copies/orders/data", "tank/copies/orders/wal"):
        assert f"{copy}@{snapshot}" in received.split(), received
    removed = api.delete(f"/api/replication-links/{link}/")
    assert removed.status_code == 202, removed.content
    finished(removed.json()["id"], worker)


def test_a_cluster_is_created_queried_snapshotted_cloned_drilled_replicated_and_retired(
        api, fleet_hosts, fleet_host, worker):
    host = register(fleet_host)
    finished(host.operations.get().pk, worker)
    refused = api.post(f"/api/hosts/{host.pk}/clusters/",
                       {"major": 15, "name": "orders", "port": fleet_host.pg_port},
                       format="json")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "port_taken"

    cluster, plan = create(api, host, worker, "orders")
    parent = "tank/postgres/orders"
    assert plan["parent"] == parent and cluster.running
    assert cluster.port == plan["port"] != fleet_host.pg_port
    assert cluster.data_dataset.name == f"{parent}/data"
    assert cluster.wal_dataset.name == f"{parent}/wal"
    assert cluster.data_checksums is True
    props = run_on(fleet_host, f"zfs get -H -o name,property,value,source "
                               f"recordsize,atime,compression -r {parent}")
    rows = {tuple(line.split("\t")[:2]): line.split("\t")[2:] for line in props.splitlines()}
    assert rows[(f"{parent}/data", "recordsize")] == ["16K", "local"]
    assert rows[(f"{parent}/wal", "recordsize")] == ["128K", "local"]
    assert rows[(f"{parent}/data", "atime")] == ["off", "local"]
    assert sql(fleet_host, cluster, "show data_checksums") == "on"
    sql(fleet_host, cluster, "CREATE TABLE made (id int); INSERT INTO made VALUES (24)")
    assert sql(fleet_host, cluster, "SELECT id FROM made") == "24"
    assert run_on(fleet_host, f"readlink -f {cluster.data_dir}/pg_wal").strip() == \
        plan["wal_dir"] == cluster.wal_dir
    # The host's way: its cluster's socket directory and listen addresses.
    assert cluster.socket_dir == fleet_host.pg_socket_dir
    assert sql(fleet_host, cluster, "show listen_addresses") == fleet_host.address

    taken = api.post(f"/api/hosts/{host.pk}/snapshots/", {"cluster": cluster.pk},
                     format="json")
    assert taken.status_code == 202, taken.content
    snapshot = finished(taken.json()["id"], worker).state["snapshot"]
    names = run_on(fleet_host, f"zfs list -H -t snapshot -o name -r {parent}").split()
    assert {f"{parent}@{snapshot}", f"{parent}/data@{snapshot}",
            f"{parent}/wal@{snapshot}"} <= set(names)

    # The existing clone feature takes it as it is: a clone of that snapshot answers.
    api.put(f"/api/hosts/{host.pk}/clone-settings/",
            {"port_min": 6610, "port_max": 6620, "listen_address": None,
             "allowed_networks": ["127.0.0.0/8"]}, format="json")
    made = api.post("/api/clones/", {"host": host.pk, "cluster": cluster.pk, "name": "copy",
                                     "snapshot": snapshot}, format="json")
    assert made.status_code == 202, made.content
    finished(made.json()["operation"]["id"], worker)
    shown = api.get(f"/api/clones/{made.json()['clone']['id']}/").json()
    url = shown["connection_string"].replace(f"{shown['role']}@",
                                             f"{shown['role']}:{made.json()['password']}@")
    done = subprocess.run(["psql", url, "-XAtc", "SELECT id FROM made"], capture_output=True,
                          text=True, timeout=30)
    assert (done.returncode, done.stdout.strip()) == (0, "24"), done.stderr
    url = f"/api/hosts/{host.pk}/retire-cluster/"
    in_use = api.post(url, {"cluster": cluster.pk, "stop": True, "datasets": "destroy"},
                      format="json")
    assert in_use.status_code == 409 and in_use.json()["error"]["code"] == "in_use"
    assert "clone copy" in in_use.json()["error"]["message"]
    gone = api.delete(f"/api/clones/{shown['id']}/")
    assert gone.status_code == 202, gone.content
    finished(gone.json()["id"], worker)
    drilled(api, host, cluster, worker)
    replicated(api, fleet_hosts, host, cluster, snapshot, worker)

    kept, _ = create(api, host, worker, "kept")
    running = api.post(url, {"cluster": kept.pk, "datasets": "destroy"}, format="json")
    assert running.status_code == 409 and running.json()["error"]["code"] == "running"
    answer = api.post(url, {"cluster": kept.pk, "stop": True, "final_snapshot": True},
                      format="json")
    assert answer.status_code == 202, answer.content
    retired = finished(answer.json()["id"], worker)
    assert retired.result["destroyed"] == []
    final = retired.result["snapshot"]
    assert final and final[0].startswith("tank/postgres/kept@pozol_final_")
    assert final[0] in run_on(fleet_host, "zfs list -H -t snapshot -o name -r tank/postgres/kept")
    assert not host.clusters.filter(pk=kept.pk).exists()
    assert "kept/data/pgdata" not in run_on(fleet_host, "ps -eo args")

    answer = api.post(url, {"cluster": cluster.pk, "stop": True, "datasets": "destroy"},
                      format="json")
    assert answer.status_code == 202, answer.content
    retired = finished(answer.json()["id"], worker)
    assert retired.result["destroyed"] == [parent]
    assert parent not in run_on(fleet_host, "zfs list -H -o name -r tank")
    assert not host.clusters.filter(pk=cluster.pk).exists()
    assert host.clusters.get().port == fleet_host.pg_port  # the host's own one is untouched


def test_a_discovery_that_read_the_host_before_a_retire_does_not_bring_the_cluster_back(
        api, fleet_host, worker):
    """The race forced: the host read (as discovery reads it, through the host's own
    SSH session) while the new cluster runs, the cluster retired (stopped, datasets
    kept), then that read recorded. The cluster stays retired. Started again by hand,
    it is the host's once more: the next discovery, reading after the retire, records
    it running."""
    host = register(fleet_host)
    finished(host.operations.get().pk, worker)
    cluster, _ = create(api, host, worker, "lazarus")
    host.refresh_from_db()  # the key its discovery pinned
    read_at = timezone.now()
    read = discover(ssh.session(host.ssh_target()), login=host.user)
    assert cluster.data_dir in [c.data_dir for c in read.clusters]

    url = f"/api/hosts/{host.pk}/retire-cluster/"
    answer = api.post(url, {"cluster": cluster.pk, "stop": True}, format="json")
    assert answer.status_code == 202, answer.content
    finished(answer.json()["id"], worker)
    assert "lazarus/data/pgdata" not in run_on(fleet_host, "ps -eo args")

    summary = record_facts(host, read.to_dict(), read_at=read_at)
    assert not host.clusters.filter(data_dir=cluster.data_dir).exists()
    assert summary[NOT_RECORDED] == [cluster.data_dir]
    host.refresh_from_db()
    assert cluster.data_dir not in [c["data_dir"] for c in host.facts["clusters"]]

    run_on(fleet_host, f"cd / && runuser -u {cluster.owner} -- {cluster.bin_dir}/pg_ctl "
                       f"-D {cluster.data_dir} -l /tmp/lazarus.log -w start")
    answer = api.post(f"/api/hosts/{host.pk}/discover/")
    assert answer.status_code == 202, answer.content
    discovered = finished(answer.json()["id"], worker)
    assert NOT_RECORDED not in discovered.result
    again = host.clusters.get(data_dir=cluster.data_dir)
    assert again.running and again.port == cluster.port
    assert again.data_dataset.name == "tank/postgres/lazarus/data"

    answer = api.post(url, {"cluster": again.pk, "stop": True, "datasets": "destroy"},
                      format="json")
    assert answer.status_code == 202, answer.content
    assert finished(answer.json()["id"], worker).result["destroyed"] == [
        "tank/postgres/lazarus"]
