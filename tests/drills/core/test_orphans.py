"""Orphan clones, decided without a host: the listing parsed into one entry per clone
name with its postmasters, and which entries are removed, kept or not ours."""

from apps.drills.core import orphans

LISTING = """\
tank/pozol_clones\tpozol:clone\t-
tank/pozol_clones\tcreation\t1000
tank/pozol_clones/lost\tpozol:clone\t-
tank/pozol_clones/lost\tmountpoint\t/tank/pozol_clones/lost
tank/pozol_clones/lost/data\tpozol:clone\tlost
tank/pozol_clones/lost/data\tpozol:owner\tpozol
tank/pozol_clones/lost/data\tcreation\t1000
tank/pozol_clones/lost/data\tmountpoint\t/tank/pozol_clones/lost/data
tank/pozol_clones/lost/wal\tpozol:clone\tlost
tank/pozol_clones/lost/wal\tpozol:owner\tpozol
tank/pozol_clones/lost/wal\tcreation\t1001
tank/pozol_clones/lost/wal\tmountpoint\t/tank/pozol_clones/lost/wal
tank/pozol_clones/lost/data@x\tpozol:clone\tlost
tank/pozol_clones/dev1/data\tpozol:clone\tdev1
tank/pozol_clones/dev1/data\tcreation\t1000
tank/pozol_clones/dev1/data\tmountpoint\t/tank/pozol_clones/dev1/data
tank/pozol_clones/theirs/data\tpozol:clone\ttheirs
tank/pozol_clones/theirs/data\tpozol:owner\tother-plane
tank/pozol_clones/theirs/data\tcreation\t1000
tank/pozol_clones/young/data\tpozol:clone\tyoung
tank/pozol_clones/young/data\tcreation\t1990
tank/pozol_clones/busy/data\tpozol:clone\tbusy
tank/pozol_clones/busy/data\tcreation\t1000
tank/pozol_clones/liar/data\tpozol:clone\tsomeone-else
tank/pg/data\tpozol:clone\t-
--postmasters--
  153  5000 /usr/lib/postgresql/15/bin/postgres -D /tank/pg/data/pgdata
  901   300 /usr/lib/postgresql/15/bin/postgres -D /tank/pozol_clones/lost/data/pgdata
  902   300 /usr/lib/postgresql/15/bin/postgres -D /tank/pozol_clones/lost-too/data/pgdata
"""


def test_the_listing_gives_one_entry_per_clone_with_its_postmasters():
    found = {entry.name: entry for entry in orphans.parse(LISTING)}
    assert set(found) == {"lost", "dev1", "theirs", "young", "busy"}  # "liar" misnamed
    lost = found["lost"]
    assert lost.root == "tank/pozol_clones/lost" and lost.created == 1000
    assert lost.datasets == ["tank/pozol_clones/lost/data", "tank/pozol_clones/lost/wal"]
    assert [p.pid for p in lost.postmasters] == [901]  # not lost-too's, not the origin's
    assert found["theirs"].owner == "other-plane" and found["dev1"].owner == ""


def test_orphans_are_removed_only_when_old_idle_and_ours():
    remove, kept = orphans.orphans(orphans.parse(LISTING), known={"dev1"}, busy={"busy"},
                                   instance="pozol", now=2000, grace_seconds=60)
    assert [entry.name for entry in remove] == ["lost"]
    assert {entry.name: why for entry, why in kept} == {
        "busy": "an operation is running for it", "young": "younger than the grace period"}


def test_the_removal_stops_the_postmasters_then_destroys_the_root():
    lost = next(e for e in orphans.parse(LISTING) if e.name == "lost")
    text = orphans.remove(lost).text
    assert "kill -QUIT" in text and "901" in text
    assert text.index("kill -QUIT") < text.index("zfs destroy -r tank/pozol_clones/lost")
