"""A clone "now" in one SSH round trip: the room check, the snapshot, its listing and the
clone in one script, read back from its sections. The script's output here was captured
from a zfs-fuse test host (tests/remote/fixtures/zfs-fuse/captured/clones/: a clone made,
one whose PostgreSQL could not start, one refused by a reserve set after the request);
the steps run against a strict fake shell answering with it.
tests/integration/test_clones.py makes such clones on a real host."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from apps.clones import services, steps
from apps.clones.core import commands
from apps.clones.models import Clone
from apps.fleet import reserves
from apps.fleet.core import room
from apps.fleet.models import Dataset, Pool
from apps.ops.engine import StepContext
from apps.ops.models import Operation
from apps.remote.facts.snapshots import parse_listing
from apps.snapshots.core import commands as snapshot_commands
from apps.snapshots.core import naming
from apps.snapshots.models import Snapshot
from tests.driving import drive
from tests.remote.fakeshell import FakeShell
from tests.snapshots import factories

pytestmark = pytest.mark.django_db

CAPTURED = Path(__file__).parents[1] / "remote/fixtures/zfs-fuse/captured/clones"


def captured(name: str) -> dict:
    return json.loads((CAPTURED / f"{name}.json").read_text())


def label_of(output: dict) -> str:
    return parse_listing(commands.sections(output["stdout"])["listing"])[0].name


@pytest.fixture
def shell(monkeypatch):
    fake = FakeShell()
    monkeypatch.setattr(StepContext, "runner", lambda self: fake)
    return fake


def now_clone(monkeypatch, name: str, output: dict):
    """A clone "now" requested as the captured one was: its snapshot's label is the
    captured label, so the captured listing names it."""
    host = factories.host()
    Dataset.objects.filter(host=host, name="tank/pg/data").update(mountpoint="/tank/pg/data")
    Dataset.objects.filter(host=host, name="tank/pg/wal").update(mountpoint="/tank/pg/wal")
    cluster = factories.cluster(host, data_dir="/tank/pg/data/pgdata",
                                wal_dir="/tank/pg/wal/pg_wal")
    monkeypatch.setattr(naming, "snapshot_name", lambda when: label_of(output))
    clone, operation, _ = services.create_clone(host, cluster, name=name)
    return host, clone, operation


def answer(shell: FakeShell, host, clone: Clone, operation: Operation, output: dict) -> None:
    operation.refresh_from_db()  # as the step reads it (jsonb sorts the properties)
    command, _ = steps.one_trip(clone, operation.state, host)
    shell.on(command, output["stdout"], exit_code=output["exit_code"],
             stderr=output["stderr"])


def test_the_sections_of_a_clone_made_in_one_trip():
    output = captured("ready")
    parts = commands.sections(output["stdout"])
    assert list(parts) == ["room", "snapshot", "listing", "clone"]
    assert room.parse_guard(parts["room"]) == {
        "tank": room.Room(pool="tank", used=81911808, available=949886976)}
    rows = parse_listing(parts["listing"])
    assert [row.dataset for row in rows] == ["tank/pg", "tank/pg/data", "tank/pg/wal"]
    assert {row.creation for row in rows} == {1795901845}
    assert set(commands.marks(parts["clone"])) == {"begin", "cloned", "started"}


def test_a_clone_now_is_one_command_and_records_its_snapshot_from_the_host(
        monkeypatch, shell, delivered):
    output = captured("ready")
    host, clone, operation = now_clone(monkeypatch, "cap1", output)
    answer(shell, host, clone, operation, output)
    operation = drive(operation)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert len(shell.calls) == 1  # one round trip
    assert shell.stdins[0].startswith(b"\\set pw '")  # the role SQL reaches the clone's psql
    clone.refresh_from_db()
    assert clone.state == Clone.State.READY
    label = label_of(output)
    recorded = Snapshot.objects.filter(host=host, name=label)
    assert sorted(recorded.values_list("dataset", flat=True)) == [
        "tank/pg", "tank/pg/data", "tank/pg/wal"]
    for row in recorded:  # the host's creation time and properties, as snapshot now records
        assert row.created_at == datetime.fromtimestamp(1795901845, UTC)
        assert (row.origin, row.label, row.policy_name) == ("pozol", "for clone cap1",
                                                            "manual")
    assert recorded.get(dataset="tank/pg/data").clones == ["tank/pozol_clones/cap1/data"]
    log = " ".join(operation.log_lines.values_list("text", flat=True))
    assert f"3 snapshots @{label} (recursive)" in log


def test_a_clone_failing_after_its_snapshot_destroys_what_it_made_and_the_snapshot(
        monkeypatch, shell, delivered):
    output = captured("clone_failed")
    host, clone, operation = now_clone(monkeypatch, "cap2", output)
    answer(shell, host, clone, operation, output)
    layout = clone.decoded_layout()
    shell.on(commands.destroy(layout))
    # The host's listing, which still has the snapshots the script took.
    shell.on(snapshot_commands.listing(), commands.sections(output["stdout"])["listing"])
    for full_name in clone.own_snapshots:
        shell.on(snapshot_commands.destroy(full_name))
    operation = drive(operation)
    assert operation.status == Operation.Status.FAILED
    assert operation.error_code == "clone_failed"
    assert "could not bind IPv4 address" in operation.error
    clone.refresh_from_db()
    assert clone.state == Clone.State.FAILED and clone.own_snapshots == []
    assert not Snapshot.objects.filter(host=host, name=label_of(output)).exists()
    assert shell.calls[1] == commands.destroy(layout).text


def test_a_clone_refused_by_the_room_its_script_read_made_nothing(
        monkeypatch, shell, delivered):
    output = captured("no_room")
    host = factories.host()
    Dataset.objects.filter(host=host, name="tank/pg/data").update(mountpoint="/tank/pg/data")
    Dataset.objects.filter(host=host, name="tank/pg/wal").update(mountpoint="/tank/pg/wal")
    cluster = factories.cluster(host, data_dir="/tank/pg/data/pgdata",
                                wal_dir="/tank/pg/wal/pg_wal")
    clone, operation, _ = services.create_clone(host, cluster, name="cap3")
    Pool.objects.create(host=host, name="tank")
    reserves.set_reserve(host, "tank", reserve_bytes=2**50)
    answer(shell, host, clone, operation, output)
    operation = drive(operation)
    assert operation.status == Operation.Status.FAILED
    assert operation.error_code == "no_room"
    assert operation.error == (
        "refused: pool tank has 880 MiB free and keeps a reserve of 1.0 PiB; a clone may "
        "need 256 MiB: free space on the pool or lower its reserve")
    assert len(shell.calls) == 1  # nothing to clean up: nothing was made
    clone.refresh_from_db()
    assert clone.state == Clone.State.FAILED and "keeps a reserve" in clone.error
    assert not Snapshot.objects.filter(host=host).exists()


FIGURES = (81911808, 949886976)  # the captured pool's used and available
FLOOR = sum(FIGURES) * 10 // 100


@pytest.mark.parametrize(("reserve", "needed"), [
    (room.Reserve(), 256 * 2**20),
    (room.Reserve(), FIGURES[1] - FLOOR),  # exactly at the floor: allowed
    (room.Reserve(), FIGURES[1] - FLOOR + 1),  # a byte past it: refused
    (room.Reserve(percent=0), FIGURES[1]),
    (room.Reserve(bytes=FIGURES[1] - 100), 100),
    (room.Reserve(bytes=FIGURES[1] - 100), 101),
    (room.Reserve(bytes=2**50), 0),
])
def test_the_hosts_room_check_decides_as_the_control_planes(tmp_path, reserve, needed):
    """The snippet run by sh, with `zfs` answering the captured figures, refuses exactly
    when apps.fleet.core.room.shortage does."""
    fake = tmp_path / "zfs"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n%s\\n' {FIGURES[0]} {FIGURES[1]}\n")
    fake.chmod(0o755)
    done = subprocess.run(["sh", "-c", room.guard_command("tank", reserve, needed).text],
                          env={"PATH": f"{tmp_path}:/usr/bin:/bin"}, capture_output=True,
                          text=True, timeout=10)
    found = room.parse_guard(done.stdout)["tank"]
    assert found == room.Room("tank", *FIGURES)
    refused = room.shortage(found, reserve, needed, "a clone") is not None
    assert (done.returncode != 0) == refused


def test_a_step_run_again_after_its_worker_died_goes_the_long_way(shell, delivered):
    """The first run may have made things (its worker died in the script): the second
    reads the room, removes what the first made, then clones, each on its own."""
    host = factories.host()
    Dataset.objects.filter(host=host, name="tank/pg/data").update(mountpoint="/tank/pg/data")
    Dataset.objects.filter(host=host, name="tank/pg/wal").update(mountpoint="/tank/pg/wal")
    cluster = factories.cluster(host, data_dir="/tank/pg/data/pgdata",
                                wal_dir="/tank/pg/wal/pg_wal")
    snap = "pozol_manual_20261123T190000Z"
    for dataset in ("tank/pg/data", "tank/pg/wal"):
        factories.snapshot(host, f"{dataset}@{snap}")
    clone, operation, _ = services.create_clone(host, cluster, snapshot=snap, name="again")
    Operation.objects.filter(pk=operation.pk).update(state={**operation.state, "began": True})
    layout = clone.decoded_layout()
    shell.on(room.read_command("tank"), "\n".join(map(str, FIGURES)) + "\n")
    shell.on(commands.destroy(layout))
    create = commands.create(layout, clone.decrypted_password(), steps.identity(),
                             quota=clone.quota)
    shell.on(create, commands.sections(captured("ready")["stdout"])["clone"])
    operation = drive(operation)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert shell.calls == [room.read_command("tank").text, commands.destroy(layout).text,
                           create.text]
