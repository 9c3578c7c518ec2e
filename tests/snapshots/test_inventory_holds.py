"""Who holds a snapshot: the inventory asks `zfs holds` only for held snapshots, only on a
ZFS that lists holds, in chunks; answers are the real OpenZFS 2.3 capture (extra/3.txt)
and zfs-fuse's real listing."""

from pathlib import Path

import pytest

from apps.snapshots import inventory
from apps.snapshots.core import commands
from apps.snapshots.models import Snapshot
from tests.remote.fakeshell import FakeShell
from tests.snapshots import factories

pytestmark = [pytest.mark.django_db]

FIXTURES = Path(__file__).parents[1] / "remote/fixtures"
FUSE_LISTING = (FIXTURES / "zfs-fuse/captured/snapshots/listing.txt").read_text()
HOLDS = (FIXTURES / "openzfs-2.3/captured/extra/3.txt").read_text().split("\n", 2)[2]
OPENZFS = {"dialect": "openzfs", "implementation": "OpenZFS", "capabilities": {}}


def listing(held: dict[str, int]) -> str:
    return "".join(f"{name}\tcreation\t1795461216\t-\n{name}\tuserrefs\t{refs}\t-\n"
                   for name, refs in held.items())


def test_the_tags_of_a_held_snapshot_are_recorded_on_openzfs():
    host = factories.host(zfs=OPENZFS)
    shell = FakeShell().on(commands.listing(), listing({"tank/pg/data@captured": 1,
                                                        "tank/pg/wal@captured": 0}))
    shell.on("zfs holds -H tank/pg/data@captured", HOLDS)
    inventory.refresh(host, shell)
    found = {s.full_name: s for s in Snapshot.objects.filter(host=host)}
    assert found["tank/pg/data@captured"].holds == ["keep"]
    assert found["tank/pg/wal@captured"].holds == []
    assert len(shell.calls) == 2  # not the unheld one: only what userrefs says is held


def test_no_holds_command_when_nothing_is_held():
    host = factories.host(zfs=OPENZFS)
    shell = FakeShell().on(commands.listing(), listing({"tank/pg/data@a": 0}))
    inventory.refresh(host, shell)  # the strict shell refuses any other command
    assert shell.calls == [commands.listing().text]


def test_zfs_fuse_keeps_the_count_and_is_never_asked_for_holds():
    # The real listing has a held snapshot (tank/pg/data@hand1, userrefs 1).
    host = factories.host()
    shell = FakeShell().on(commands.listing(), FUSE_LISTING)
    inventory.refresh(host, shell)
    held = Snapshot.objects.get(host=host, dataset="tank/pg/data", name="hand1")
    assert (held.userrefs, held.holds) == (1, [])
    assert shell.calls == [commands.listing().text]


def test_a_long_list_of_held_snapshots_is_asked_in_chunks(monkeypatch):
    monkeypatch.setattr(inventory, "HOLDS_CHUNK", 2)
    host = factories.host(zfs=OPENZFS)
    names = [f"tank/pg/data@s{n}" for n in range(5)]
    shell = FakeShell().on(commands.listing(), listing(dict.fromkeys(names, 1)))
    for chunk in (names[0:2], names[2:4], names[4:]):
        shell.on(commands.holds(chunk), "".join(f"{n}\tpozol\tFri Nov 27 08:34 2026\n"
                                                for n in chunk))
    inventory.refresh(host, shell)
    assert len(shell.calls) == 4
    assert [s.holds for s in Snapshot.objects.filter(host=host)] == [["pozol"]] * 5


def test_a_snapshot_gone_before_its_holds_were_read_leaves_the_others_read():
    # The real answer (zfs lists what it found, names the missing one and exits 1).
    gone = (FIXTURES / "openzfs-2.3/captured/holds/one_gone.txt").read_text()
    command, code, answer = gone.split("\n", 2)
    host = factories.host(zfs=OPENZFS)
    shell = FakeShell().on(commands.listing(), listing({"tank/pg/data@gone": 1,
                                                        "tank/pg/data@t1": 3}))
    assert command == f"$ {commands.holds(['tank/pg/data@gone', 'tank/pg/data@t1']).text}"
    shell.on(command.removeprefix("$ "), answer, exit_code=int(code.removeprefix("# exit ")))
    inventory.refresh(host, shell)
    found = {s.name: s.holds for s in Snapshot.objects.filter(host=host)}
    assert found == {"t1": ["keep me", "pozol", "tab\tx"], "gone": []}
