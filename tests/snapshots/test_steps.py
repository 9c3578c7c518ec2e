"""The snapshot steps against a strict fake shell: the exact commands, the inventory
after them, and refusals found on the host at the last moment."""

from pathlib import Path

import pytest

from apps.fleet.core import room
from apps.fleet.models import Dataset
from apps.ops.engine import StepContext
from apps.ops.models import Operation
from apps.remote.shell import Result
from apps.snapshots import services
from apps.snapshots.core import commands
from apps.snapshots.models import Snapshot
from tests.driving import drive
from tests.remote.fakeshell import FakeShell
from tests.snapshots import factories

pytestmark = [pytest.mark.django_db]

LISTING = (Path(__file__).parents[1] / "remote/fixtures/zfs-fuse/captured/snapshots/"
           "listing.txt").read_text()


ROOM = "1000000\n900000000\n"  # the pool's used and available: room enough


@pytest.fixture
def shell(monkeypatch):
    fake = FakeShell()
    fake.on(room.read_command("tank"), ROOM)
    monkeypatch.setattr(StepContext, "runner", lambda self: fake)
    return fake


def test_snapshot_now_of_a_cluster_runs_one_atomic_command_then_lists(shell, delivered):
    host = factories.host()
    operation = services.snapshot_now(host, cluster=factories.cluster(host), label="x",
                                      hold=True)
    name = operation.state["snapshot"]
    # (jsonb keeps the properties sorted by name)
    shell.on(f"zfs snapshot -r -o pozol:label=x -o pozol:owner=pozol -o pozol:policy=manual "
             f"tank/pg@{name}")
    taken = [f"{dataset}@{name}" for dataset in ("tank/pg", "tank/pg/data", "tank/pg/wal")]
    for full_name in taken:
        shell.on(f"zfs hold pozol {full_name}")
    answer = "".join(f"{full_name}\tcreation\t1795461216\t-\n"
                     f"{full_name}\tuserrefs\t1\t-\n"
                     f"{full_name}\tpozol:owner\tpozol\tlocal\n" for full_name in taken)
    shell.on(commands.listing(taken), answer)
    operation = drive(operation)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert operation.result["method"] == "recursive"
    assert sorted(s.full_name for s in Snapshot.objects.filter(host=host, userrefs=1,
                                                               origin="pozol")) == sorted(taken)
    log = " ".join(operation.log_lines.values_list("text", flat=True))
    assert "method recursive: data and WAL sit alone under tank/pg" in log


def test_backup_mode_wraps_both_snapshots_in_one_psql_session(monkeypatch, delivered):
    host = factories.host(datasets=("tank", "tank/pg", "tank/pg/data", "tank/pg/wal",
                                    "tank/pg/other"))
    operation = services.snapshot_now(host, cluster=factories.cluster(host))
    assert operation.state["plan"]["method"] == "backup"
    scripts: list[str] = []

    def runner(command, **kwargs):
        if command == room.read_command("tank"):
            return Result(command.redacted(), 0, ROOM, "")
        scripts.append(command.text)
        stdout = "started\nSTART WAL LOCATION: 0/3000028\n" if len(scripts) == 1 else ""
        return Result(command.redacted(), 0, stdout, "")

    monkeypatch.setattr(StepContext, "runner", lambda self: runner)
    operation = drive(operation)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    script = scripts[0]
    assert script.index("pg_backup_start") < script.index("zfs snapshot") \
        < script.index("pg_backup_stop")
    assert script.count("zfs snapshot") == 2  # zfs-fuse refuses several names at once
    assert scripts[1].startswith(commands.listing().text + " ")  # the two new snapshots
    log = " ".join(operation.log_lines.values_list("text", flat=True))
    assert "START WAL LOCATION" in log and "tank/pg also holds tank/pg/other" in log


def test_destroy_rechecks_the_host_and_refuses_a_hold_found_there(shell, delivered):
    host = factories.host()
    snap = factories.snapshot(host, "tank/pg/data@hand1", origin="hand", properties={})
    operation = services.destroy(snap, force=True)
    shell.on(commands.listing(), LISTING)  # the host says: held and cloned
    operation = drive(operation)
    assert operation.status == Operation.Status.FAILED and operation.error_code == "held"
    assert "zfs destroy" not in " ".join(shell.calls)


def test_destroy_that_zfs_refuses_as_busy_is_reported(shell, delivered):
    host = factories.host()
    snap = factories.snapshot(host, "tank/pg/data@t1")
    operation = services.destroy(snap)
    shell.on(commands.listing(), LISTING)
    shell.on("zfs destroy tank/pg/data@t1", exit_code=1,
             stderr="cannot destroy 'tank/pg/data@t1': dataset is busy\n")
    operation = drive(operation)
    assert operation.status == Operation.Status.FAILED and operation.error_code == "busy"
    assert "dataset is busy" in operation.error


def test_refresh_replaces_the_inventory(shell, delivered):
    host = factories.host()
    factories.snapshot(host, "tank/gone@x")
    shell.on(commands.listing(), LISTING)
    operation = drive(services.start_refresh(host))
    assert operation.status == Operation.Status.SUCCEEDED
    assert not Snapshot.objects.filter(dataset="tank/gone").exists()
    held = Snapshot.objects.get(host=host, dataset="tank/pg/data", name="hand1")
    assert held.userrefs == 1 and held.clones == ["tank/clone1"] and held.origin == "hand"
    assert Snapshot.objects.get(host=host, dataset="tank/recv", name="s2").origin == "received"


def test_checkpoint_first_runs_before_the_snapshot(shell, delivered):
    host = factories.host()
    cluster = factories.cluster(host)
    operation = services.snapshot_now(host, cluster=cluster, checkpoint=True)
    name = operation.state["snapshot"]
    checkpoint = cluster.target().psql("CHECKPOINT")
    snapshot = (f"zfs snapshot -r -o pozol:owner=pozol -o pozol:policy=manual "
                f"tank/pg@{name}")
    shell.on(checkpoint).on(snapshot)
    taken = [f"{d}@{name}" for d in ("tank/pg", "tank/pg/data", "tank/pg/wal")]
    shell.on(commands.listing(taken), "")
    assert drive(operation).status == Operation.Status.SUCCEEDED
    # The pool's room is read on the host first, before anything is done.
    assert shell.calls[:3] == [room.read_command("tank").text, checkpoint.text, snapshot]


def test_a_policy_run_takes_then_prunes_and_skips_a_busy_destroy(shell, delivered):
    from datetime import UTC, datetime

    from apps.snapshots import policies
    from apps.snapshots.models import SnapshotPolicy

    host = factories.host()
    policy = SnapshotPolicy.objects.create(name="often", frequently=1, frequent_minutes=1)
    policies.assign(policy, host, dataset="tank/pg/data")
    [operation] = policies.tick(datetime(2026, 11, 23, 19, 3, 5, tzinfo=UTC))
    new = "tank/pg/data@pozol_often_20261123T190305Z"
    # (jsonb orders keys by length, then bytes)
    shell.on("zfs snapshot -o pozol:owner=pozol -o pozol:taken=20261123T190305Z "
             "-o pozol:policy=often -o pozol:periods=frequently " + new)

    def row(name: str, taken: str) -> str:
        full = f"tank/pg/data@{name}"
        return (f"{full}\tcreation\t1795461216\t-\n{full}\tuserrefs\t0\t-\n"
                f"{full}\tpozol:owner\tpozol\tlocal\n{full}\tpozol:policy\toften\tlocal\n"
                f"{full}\tpozol:taken\t{taken}\tlocal\n")

    shell.on(commands.listing([new]), row(new.partition("@")[2], "20261123T190305Z"))
    shell.on(commands.listing(), row("pozol_often_20261123T190000Z", "20261123T190000Z")
             + row("pozol_often_20261123T190100Z", "20261123T190100Z")
             + row(new.partition("@")[2], "20261123T190305Z"))
    shell.on("zfs destroy tank/pg/data@pozol_often_20261123T190000Z", exit_code=1,
             stderr="cannot destroy snapshot: dataset is busy\n")
    shell.on("zfs destroy tank/pg/data@pozol_often_20261123T190100Z")
    operation = drive(operation)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert operation.result["destroyed"] == ["tank/pg/data@pozol_often_20261123T190100Z"]
    [skipped] = operation.result["skipped"]
    assert skipped["snapshot"] == "tank/pg/data@pozol_often_20261123T190000Z"
    assert "dataset is busy" in skipped["reason"]
    log = " ".join(operation.log_lines.values_list("text", flat=True))
    assert "destroyed tank/pg/data@pozol_often_20261123T190100Z (policy often)" in log
    assert "skipped tank/pg/data@pozol_often_20261123T190000Z" in log


def test_snapshot_now_is_refused_on_a_pool_at_its_reserve(delivered):
    host = factories.host()
    Dataset.objects.filter(host=host, name="tank").update(used=950 * 2**20,
                                                          available=50 * 2**20)
    with pytest.raises(services.SnapshotError) as refused:
        services.snapshot_now(host, cluster=factories.cluster(host))
    assert refused.value.status == 409 and refused.value.code == "no_room"
    assert refused.value.fields["cluster"] == [
        "pool tank has 50.0 MiB free and keeps a reserve of 100 MiB (10% of the pool); a "
        "snapshot is refused while the pool is below it: free space on the pool or lower its "
        "reserve"]
    assert not Operation.objects.exists()


def test_snapshot_now_checks_the_room_on_the_host_again_before_it_snapshots(shell, delivered):
    """Discovery saw room; the pool filled since: the step's own reading refuses."""
    host = factories.host()
    operation = services.snapshot_now(host, cluster=factories.cluster(host))
    shell.on(room.read_command("tank"), "990000000\n10000000\n")
    operation = drive(operation)
    assert operation.status == Operation.Status.FAILED
    assert operation.error.startswith("refused: pool tank has 9.5 MiB free and keeps a "
                                      "reserve of 95.4 MiB (10% of the pool)")
    assert shell.calls == [room.read_command("tank").text]  # nothing else ran
