"""The snapshot listing parser on output captured from a real zfs-fuse host, and the
holds parser on `zfs holds` captured from a real OpenZFS 2.3 host."""

from pathlib import Path

from apps.remote.facts.snapshots import HAND, POZOL, RECEIVED, parse_holds, parse_listing

LISTING = (Path(__file__).parent / "fixtures/zfs-fuse/captured/snapshots/listing.txt").read_text()


def rows():
    return {row.full_name: row for row in parse_listing(LISTING)}


def test_every_snapshot_and_nothing_else():
    assert set(rows()) == {"tank/pg@hand1", "tank/pg/data@t1", "tank/pg/data@hand1",
                           "tank/pg/wal@hand1", "tank/pg/wal@s2", "tank/recv@s2",
                           "tank/recv2@s2"}


def test_numbers_are_exact():
    row = rows()["tank/pg/data@t1"]
    assert row.dataset == "tank/pg/data" and row.name == "t1"
    assert row.creation == 1795461216 and row.used == 0 and row.referenced == 47316992
    assert row.userrefs == 0


def test_holds_and_clones():
    held = rows()["tank/pg/data@hand1"]
    assert held.userrefs == 1 and held.clones == ("tank/clone1",)
    assert rows()["tank/pg@hand1"].clones == ()


def test_origin_is_what_the_properties_say():
    found = rows()
    assert found["tank/pg/data@t1"].origin == POZOL
    assert found["tank/pg/wal@hand1"].origin == POZOL  # set by hand afterwards: ZFS says so
    assert found["tank/pg@hand1"].origin == HAND
    assert found["tank/recv@s2"].origin == RECEIVED  # sent with -p
    assert found["tank/recv2@s2"].origin == HAND  # sent without properties
    assert found["tank/pg/wal@s2"].properties == {
        "pozol:owner": "pozol", "pozol:policy": "manual", "pozol:label": "x"}


def test_bookmarks_odd_lines_and_dashes_are_skipped():
    text = ("tank/a#bm\tcreation\t1\t-\n"
            "garbage line\n"
            "tank/a@s\tcreation\t5\t-\n"
            "tank/a@s\tused\t-\t-\n"
            "tank/a@s\tuserrefs\t-\t-\n")
    [row] = parse_listing(text)
    assert row.full_name == "tank/a@s" and row.used is None and row.userrefs == 0


def test_a_label_with_tabs_cannot_shift_columns():
    text = "tank/a@s\tpozol:label\tx\ty\tlocal\n"
    # five fields: not a row of this listing
    assert parse_listing(text) == []


def test_a_property_inherited_from_the_dataset_does_not_make_a_snapshot_ours():
    text = ("tank/x@hand\tcreation\t1795461216\t-\n"
            "tank/x@hand\tpozol:owner\tpozol\tinherited from tank/x\n"
            "tank/x@ours\tpozol:owner\tpozol\tlocal\n"
            "tank/x@ours\tpozol:taken\t20261123T190000Z\tlocal\n")
    found = {row.full_name: row for row in parse_listing(text)}
    assert found["tank/x@hand"].origin == HAND and found["tank/x@hand"].properties == {}
    assert found["tank/x@ours"].properties == {"pozol:owner": "pozol",
                                               "pozol:taken": "20261123T190000Z"}


# -- `zfs holds -H`, captured on the OpenZFS 2.3 VM test host ----------------------------

OPENZFS = Path(__file__).parent / "fixtures/openzfs-2.3/captured"


def captured(relative: str) -> str:
    """A captured command's output (its first two lines are the command and its exit code)."""
    return (OPENZFS / relative).read_text().split("\n", 2)[2]


def test_holds_of_a_snapshot_by_tag():
    assert parse_holds(captured("extra/3.txt")) == {"tank/pg/data@captured": ("keep",)}


def test_the_parsable_holds_say_what_the_table_for_people_says():
    # extra/4.txt is `zfs holds` without -H: a header, then columns padded with spaces.
    header, *lines = captured("extra/4.txt").splitlines()
    assert header.split() == ["NAME", "TAG", "TIMESTAMP"]
    table = {line.split()[0]: (line.split()[1],) for line in lines if line.strip()}
    assert parse_holds(captured("extra/3.txt")) == table
    assert parse_holds(captured("extra/4.txt")) == {}  # never mistaken for the -H form


def test_tags_with_spaces_and_tabs_are_kept_whole():
    # `zfs hold pozol`, `zfs hold 'keep me'` and a tag with a tab in it, on one snapshot.
    assert parse_holds(captured("holds/odd_tags.txt")) == {
        "tank/pg/data@t1": ("keep me", "pozol", "tab\tx")}
    header, *lines = captured("holds/odd_tags_table.txt").splitlines()
    assert len(lines) == 3  # the same three holds, as people read them


def test_a_snapshot_gone_meanwhile_does_not_hide_the_holds_of_the_others():
    # zfs prints the holds of the snapshots it found and names the missing one on stderr.
    assert parse_holds(captured("holds/one_gone.txt")) == {
        "tank/pg/data@t1": ("keep me", "pozol", "tab\tx")}
