"""A profile's recordsize "experiment" in plans, drift and the advisor, from the real
zfs-fuse capture: the winner handed in is planned like a literal value and says where it
came from; without one the change is not planned, and nothing guesses."""

from __future__ import annotations

from apps.tuning.core import drift
from apps.tuning.core.advisor import advise
from apps.tuning.core.changes import project
from apps.tuning.core.planner import plan
from apps.tuning.core.profiles import ProfileSettings, builtin
from apps.tuning.core.winners import Winner, wanted
from tests.tuning.core import hosts
from tests.tuning.core.hosts import set_prop

DATA, WAL = "tank/pg/data", "tank/pg/wal"
SAFE = builtin("oltp-safe").settings
WON = "won recordsize experiment #7 on tank/pg/data (TPS: 32K wins, 1.18x against 16K)"


def settings(data: str = "experiment", wal: str = "experiment") -> ProfileSettings:
    zfs = {"data": {**SAFE.zfs["data"], "recordsize": data},
           "wal": {**SAFE.zfs["wal"], "recordsize": wal}}
    return ProfileSettings.from_dict({**SAFE.to_dict(), "zfs": zfs})


def recordsize(p, dataset: str):
    return next((c for c in p.changes if (c.target, c.key) == (dataset, "recordsize")), None)


def test_the_profile_leaves_each_data_and_wal_dataset_to_its_own_experiment():
    assert wanted(hosts.fuse(), settings()) == [(DATA, "recordsize"), (WAL, "recordsize")]
    assert wanted(hosts.fuse(), settings(wal="128K")) == [(DATA, "recordsize")]
    assert wanted(hosts.fuse(), SAFE) == []


def test_a_winner_is_planned_as_a_concrete_value_saying_where_it_came_from():
    facts = hosts.fuse()
    p = plan(facts, settings(), winners={(DATA, "recordsize"): Winner("32K", WON)})
    data = recordsize(p, DATA)
    assert (data.current, data.desired, data.formula) == ("8192", "32K", "experiment")
    assert data.supported and data.method == "zfs_set_new_data"
    assert data.reason.startswith(WON + "; ") and "newly written data only" in data.reason
    after = {d.name: d for d in project(facts, list(p.changes)).datasets}
    assert after[DATA].properties["recordsize"].value == str(32 * 1024)  # projected...
    # ... while the WAL dataset, left to an experiment that never ran on it, is not planned.
    wal = recordsize(p, WAL)
    assert not wal.supported and wal.awaits_experiment and wal.desired == "experiment"
    assert wal.reason == ("no recordsize experiment on this host has named a winner for"
                          f" {WAL}; run one")
    assert after[WAL].properties["recordsize"] == facts_recordsize(facts, WAL)


def facts_recordsize(facts, dataset: str):
    return next(d for d in facts.datasets if d.name == dataset).properties["recordsize"]


def test_without_a_winner_nothing_is_guessed_in_plan_drift_or_advisor():
    facts = hosts.fuse()
    reason = "the newest recordsize experiment on tank/pg/data (#8) named no winner (...)"
    won = {(DATA, "recordsize"): Winner(None, reason)}
    p = plan(facts, settings(), winners=won)
    data = recordsize(p, DATA)
    assert not data.supported and data.awaits_experiment and data.reason == reason
    assert data in p.unsupported and not p.empty  # the rest of the profile still applies
    found = drift.assess(facts, settings(), winners=won)
    assert all(c.key != "recordsize" for c in found.differences)
    # The advisor judges the host as if the profile did not name a recordsize at all.
    silent = ProfileSettings.from_dict({**SAFE.to_dict(), "zfs": {
        role: {k: v for k, v in props.items() if k != "recordsize"}
        for role, props in SAFE.zfs.items()}})
    assert advise(facts, settings(), winners=won) == advise(facts, silent)


def test_a_winner_the_host_already_has_is_no_change_and_no_drift():
    facts = set_prop(hosts.fuse(), DATA, "recordsize", str(32 * 1024))
    won = {(DATA, "recordsize"): Winner("32K", WON)}
    assert recordsize(plan(facts, settings(wal="128K"), winners=won), DATA) is None
    assert all(c.target != DATA or c.key != "recordsize"
               for c in drift.assess(facts, settings(wal="128K"), winners=won).differences)
    # and drift shows it as soon as the host differs from the winner
    moved = drift.assess(hosts.fuse(), settings(wal="128K"), winners=won).differences
    assert [c.desired for c in moved if (c.target, c.key) == (DATA, "recordsize")] == ["32K"]


def test_a_winner_that_is_no_recordsize_a_profile_may_set_is_not_planned():
    p = plan(hosts.fuse(), settings(), winners={(DATA, "recordsize"): Winner("3K", WON)})
    data = recordsize(p, DATA)
    assert not data.supported and data.reason == f"{WON}, but '3K' is not a power of two" \
        " from 512 to 16M"


def test_large_records_an_experiment_chose_are_not_flagged_for_oltp():
    facts = set_prop(hosts.fuse(), DATA, "recordsize", str(1024 * 1024))
    flagged = {f.id for f in advise(facts, settings(wal="128K"))}
    assert "recordsize_large_for_oltp" in flagged  # no winner: the rule still speaks
    won = {(DATA, "recordsize"): Winner("1M", WON.replace("32K", "1M"))}
    assert "recordsize_large_for_oltp" not in {
        f.id for f in advise(facts, settings(wal="128K"), winners=won)}
