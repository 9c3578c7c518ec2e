"""What rolling a cluster back would do, planned from a listing alone."""

from apps.snapshots.core.rollback import Listed, plan_rollback

PAIR = ["tank/pg/data", "tank/pg/wal"]


def rows(*specs):
    return [Listed(*spec.split(" ")[0].split("@"), int(spec.split(" ")[1])) for spec in specs]


def test_the_pair_returns_and_newer_snapshots_are_named_newest_first():
    chosen = plan_rollback(PAIR, "p", rows(
        "tank/pg/data@old 10", "tank/pg/data@p 20", "tank/pg/data@n1 30", "tank/pg/data@n2 40",
        "tank/pg/wal@p 20", "tank/pg/wal@n1 30", "tank/other@n3 50"))
    assert chosen.snapshots == ("tank/pg/data@p", "tank/pg/wal@p")
    assert chosen.newer == ("tank/pg/data@n2", "tank/pg/data@n1", "tank/pg/wal@n1")
    assert chosen.missing == ()


def test_a_dataset_without_the_name_is_missing():
    chosen = plan_rollback(PAIR, "p", rows("tank/pg/data@p 20", "tank/pg/wal@q 20"))
    assert chosen.missing == ("tank/pg/wal",)


def test_the_same_second_or_an_unknown_time_counts_as_newer():
    chosen = plan_rollback(["tank/pg/data"], "p", rows("tank/pg/data@p 20", "tank/pg/data@s 20")
                           + [Listed("tank/pg/data", "u", None)])
    assert set(chosen.newer) == {"tank/pg/data@s", "tank/pg/data@u"}
