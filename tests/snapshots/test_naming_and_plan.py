"""Snapshot names, the choice of a consistent method, and the destroy guards: pure."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from apps.remote import snapshot_plan as plan
from apps.snapshots.core import naming
from apps.snapshots.core.guards import HAS_CLONES, HELD, NOT_OURS, destroy_refusal


def test_names_are_utc_and_sort_as_times():
    at = datetime(2026, 11, 23, 21, 5, 9, tzinfo=timezone(timedelta(hours=2)))
    assert naming.snapshot_name(at) == "pozol_manual_20261123T190509Z"
    assert naming.snapshot_name(at, "hourly") == "pozol_hourly_20261123T190509Z"
    later = naming.snapshot_name(at + timedelta(seconds=1))
    assert sorted([later, naming.snapshot_name(at)])[0] == naming.snapshot_name(at)
    assert naming.parse_name("pozol_hourly_20261123T190509Z") == (
        "hourly", datetime(2026, 11, 23, 19, 5, 9, tzinfo=UTC))
    assert naming.parse_name("autosnap_2026") is None
    with pytest.raises(ValueError):
        naming.snapshot_name(datetime(2026, 1, 1))


DEMO = ["tank", "tank/pg", "tank/pg/data", "tank/pg/wal"]


def test_data_and_wal_alone_under_one_parent_take_one_recursive_snapshot():
    chosen = plan.for_cluster("tank/pg/data", "tank/pg/wal", DEMO, multi_snapshot=False)
    assert chosen.method == plan.RECURSIVE and chosen.root == "tank/pg"
    assert chosen.names("s") == ["tank/pg@s"]
    assert chosen.covered == ("tank/pg", "tank/pg/data", "tank/pg/wal")


def test_a_sibling_under_the_parent_rules_out_recursive():
    datasets = [*DEMO, "tank/pg/other"]
    multi = plan.for_cluster("tank/pg/data", "tank/pg/wal", datasets, multi_snapshot=True)
    assert multi.method == plan.MULTI and "tank/pg/other" in multi.reason
    assert multi.names("s") == ["tank/pg/data@s", "tank/pg/wal@s"]
    backup = plan.for_cluster("tank/pg/data", "tank/pg/wal", datasets, multi_snapshot=False)
    assert backup.method == plan.BACKUP and "pg_backup_start" in backup.reason


def test_wal_inside_data_or_across_pools():
    assert plan.for_cluster("tank/pg/data", None, DEMO, multi_snapshot=False).method == \
        plan.SINGLE
    assert plan.for_cluster("a/data", "b/wal", ["a", "a/data", "b", "b/wal"],
                            multi_snapshot=False).method == plan.BACKUP
    # One `zfs snapshot` naming two pools is not atomic, even where ZFS takes many names.
    across = plan.for_cluster("a/data", "b/wal", ["a", "a/data", "b", "b/wal"],
                              multi_snapshot=True)
    assert across.method == plan.BACKUP and "different pools" in across.reason


def test_guards():
    def refusal(**kw):
        args = {"full_name": "t/a@s", "userrefs": 0, "clones": [], "origin": "pozol",
                "force": False, **kw}
        return destroy_refusal(**args)

    assert refusal() is None
    assert refusal(userrefs=1, force=True).code == HELD
    assert refusal(clones=["t/c"], force=True).code == HAS_CLONES
    assert refusal(clones=["t/c"]).message == "t/a@s has clones: t/c"
    assert refusal(origin="hand").code == NOT_OURS
    assert refusal(origin="received").code == NOT_OURS
    assert refusal(origin="hand", force=True) is None
