"""The create and retire steps against a strict fake shell: the commands in their
order, the room read again before anything is made, and retiring's rows forgotten.
That a cluster is really made and unmade is tests/integration/test_create_cluster.py."""

from __future__ import annotations

import pytest

from apps.fleet import reserves
from apps.fleet import services as fleet_services
from apps.fleet.core import room
from apps.ops import engine
from apps.ops.engine import StepContext
from apps.ops.models import Operation
from apps.provisioning import services, steps
from apps.provisioning.core import commands
from apps.provisioning.core.layout import Plan
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import script
from tests.driving import drive
from tests.remote.fakeshell import FakeShell
from tests.remote.fixtures.hosts import replay_transcript

pytestmark = pytest.mark.django_db
GiB = 2**30


@pytest.fixture
def shell(monkeypatch) -> FakeShell:
    fake = FakeShell()
    monkeypatch.setattr(StepContext, "runner", lambda self: fake)
    return fake


def started(host, delivered) -> tuple[Operation, Plan]:
    plan, operation = services.create_cluster(host, major=15, name="app")
    return operation, Plan.from_dict(operation.state["plan"])


def one_trip(host, plan: Plan, operation: Operation):
    return commands.make_and_start(plan, reserves.guard_in_script(host,
                                                                   operation.state["room"]))


def test_create_checks_the_room_makes_initialises_and_starts_in_one_round_trip(
        replayed_host, shell, delivered):
    operation, plan = started(replayed_host, delivered)
    data_mount, wal_mount = commands.planned_mounts(plan)
    shell.on(one_trip(replayed_host, plan, operation),
             f"pozol-room tank {GiB} {4 * GiB}\n{data_mount}\n{wal_mount}\nSuccess.\n"
             "postmaster pid: 4242\n")
    engine.run_step(operation.pk, owner="test")
    operation.refresh_from_db()
    assert operation.step == "discover" and operation.is_active
    assert operation.state["pid"] == 4242
    assert operation.state["mounts"] == [data_mount, wal_mount]
    assert len(shell.calls) == 1
    made = shell.calls[0]
    assert made.index("pozol-room") < made.index("zfs create") < made.index("initdb") < \
        made.index("postgresql.auto.conf") < made.index("-w -t 120 start") < \
        made.index("postmaster.pid")
    assert "--data-checksums" in made


def test_create_stops_before_making_anything_when_the_pool_filled_up(replayed_host, shell,
                                                                     delivered):
    operation, plan = started(replayed_host, delivered)
    shell.on(one_trip(replayed_host, plan, operation), f"pozol-room tank {GiB} {2**20}\n",
             exit_code=1)
    failed = drive(operation)
    assert failed.status == Operation.Status.FAILED and failed.error_code == "no_room"
    assert "a reserve of" in failed.error
    assert len(shell.calls) == 1


def test_a_plan_that_does_not_know_the_mountpoints_goes_step_by_step(replayed_host, shell,
                                                                     delivered):
    operation, plan = started(replayed_host, delivered)
    state = operation.state
    state["plan"] = {**state["plan"], "data_dir": None, "wal_dir": None}
    Operation.objects.filter(pk=operation.pk).update(state=state)
    plan = Plan.from_dict(state["plan"])
    shell.on(room.read_command("tank"), f"{GiB}\n{4 * GiB}\n")
    shell.on(commands.create_datasets(plan), "/m/data\n/m/wal\n")
    shell.on(commands.initialise_and_start(plan, "/m/data", "/m/wal"),
             "postmaster pid: 4242\n")
    engine.run_step(operation.pk, owner="test")
    engine.run_step(operation.pk, owner="test")
    operation.refresh_from_db()
    assert operation.step == "discover" and operation.state["pid"] == 4242
    assert shell.calls == [c.text for c in (
        room.read_command("tank"), commands.create_datasets(plan),
        commands.initialise_and_start(plan, "/m/data", "/m/wal"))]


def test_retire_stops_destroys_and_forgets(replayed_host, shell, delivered):
    cluster = replayed_host.clusters.get()
    operation = services.retire_cluster(replayed_host, cluster.pk, stop=True,
                                        datasets="destroy")
    target = ClusterTarget.of(**operation.state["target"])
    shell.on(target.pg_ctl("status"))
    shell.on(target.control("stop"))
    shell.on(script(steps._DESTROY, name="tank/pg"))
    done = drive(operation)
    assert done.status == Operation.Status.SUCCEEDED, done.error
    assert done.result["destroyed"] == ["tank/pg"]
    assert not replayed_host.clusters.exists()
    assert not replayed_host.datasets.filter(name__startswith="tank/pg").exists()
    assert replayed_host.datasets.filter(name="tank").exists()


def test_retire_does_not_stop_a_cluster_that_is_not_running(replayed_host, shell, delivered):
    cluster = replayed_host.clusters.get()
    operation = services.retire_cluster(replayed_host, cluster.pk, stop=True,
                                        final_snapshot=True)
    target = ClusterTarget.of(**operation.state["target"])
    shell.on(target.pg_ctl("status"), exit_code=3)
    names = operation.state["snapshot"]["names"]
    assert names == [f"tank/pg@{names[0].split('@')[1]}"] and \
        operation.state["snapshot"]["recursive"]
    shell.on(script(steps._SNAPSHOT, name=names[0], flags=["-r"]))
    done = drive(operation)
    assert done.status == Operation.Status.SUCCEEDED, done.error
    assert done.result["snapshot"] == names and done.result["destroyed"] == []
    assert replayed_host.datasets.filter(name="tank/pg/data").exists()


def packaged(host):
    cluster = host.clusters.get()
    cluster.pg_ctlcluster, cluster.packaged_as = True, "15/main"
    cluster.save()
    return cluster


def test_retiring_a_packaged_cluster_with_its_datasets_drops_it_first(replayed_host, shell,
                                                                      delivered):
    cluster = packaged(replayed_host)
    operation = services.retire_cluster(replayed_host, cluster.pk, stop=True,
                                        datasets="destroy")
    target = ClusterTarget.of(**operation.state["target"])
    shell.on(target.pg_ctl("status"))
    shell.on(target.control("stop"))
    drop = script(steps._DROPCLUSTER, etc="/etc/postgresql/15/main", major="15", name="main")
    shell.on(drop)
    shell.on(script(steps._DESTROY, name="tank/pg"))
    done = drive(operation)
    assert done.status == Operation.Status.SUCCEEDED, done.error
    assert shell.calls.index(drop.text) < shell.calls.index(
        script(steps._DESTROY, name="tank/pg").text)
    assert "pg_ctlcluster --mode fast 15 main stop" in shell.calls[1]


def test_retiring_a_packaged_cluster_keeping_its_datasets_stops_it_starting_at_boot(
        replayed_host, shell, delivered):
    cluster = packaged(replayed_host)
    operation = services.retire_cluster(replayed_host, cluster.pk, stop=True)
    target = ClusterTarget.of(**operation.state["target"])
    shell.on(target.pg_ctl("status"))
    shell.on(target.control("stop"))
    manual = script(steps._MANUAL, start_conf="/etc/postgresql/15/main/start.conf")
    shell.on(manual)
    done = drive(operation)
    assert done.status == Operation.Status.SUCCEEDED, done.error
    assert shell.calls[-1] == manual.text
    assert "printf 'manual\\n' > /etc/postgresql/15/main/start.conf" in manual.text


def test_a_discovery_that_read_the_host_before_a_retire_does_not_bring_it_back(
        replayed_host, shell, delivered):
    """The race: a discovery gathers (the real zfs-fuse capture: the cluster running on
    tank/pg), a retire stops the cluster, destroys tank/pg and forgets it, then the
    discovery records. The cluster and its datasets stay gone, and the discovery says
    why; the next discovery, which reads the host after the retire, records what it
    finds there (here the same capture: as if the operator had made it again)."""
    shell.script.update(replay_transcript().script)
    discovery = fleet_services.discover(replayed_host)
    while discovery.step != "record":
        engine.run_step(discovery.pk, owner="test")
        discovery.refresh_from_db()
    cluster = replayed_host.clusters.get()
    retire = services.retire_cluster(replayed_host, cluster.pk, stop=True, datasets="destroy")
    target = ClusterTarget.of(**retire.state["target"])
    shell.on(target.pg_ctl("status"))
    shell.on(target.control("stop"))
    shell.on(script(steps._DESTROY, name="tank/pg"))
    assert drive(retire).status == Operation.Status.SUCCEEDED

    done = drive(discovery)

    assert done.status == Operation.Status.SUCCEEDED, done.error
    assert not replayed_host.clusters.exists()
    assert not replayed_host.datasets.filter(name__startswith="tank/pg").exists()
    assert done.result["not_recorded_retired"] == [cluster.data_dir]
    assert done.result["clusters"] == 0
    log = [line.text for line in done.log_lines.filter(level="warning")]
    assert any(f"not recorded: the cluster at {cluster.data_dir}, retired" in line
               for line in log), log
    replayed_host.refresh_from_db()
    assert replayed_host.facts["clusters"] == []
    assert not [d for d in replayed_host.facts["datasets"] if d["name"].startswith("tank/pg")]
    assert not replayed_host.alerts.filter(kind="cluster_down", resolved_at=None).exists()

    again = drive(fleet_services.discover(replayed_host))
    assert again.status == Operation.Status.SUCCEEDED, again.error
    assert "not_recorded_retired" not in again.result
    row = replayed_host.clusters.get()
    assert (row.data_dir, row.running, row.data_dataset.name) == (
        cluster.data_dir, True, "tank/pg/data")
