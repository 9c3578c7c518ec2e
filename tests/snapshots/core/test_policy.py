"""A policy refuses bad input with a message a person can act on; snapshots say whose they are."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from apps.snapshots.core.policy import (
    OWNER_PROPERTY,
    POLICY_PROPERTY,
    TAKEN_PROPERTY,
    Period,
    Policy,
    PolicyError,
    SnapshotInfo,
    owned_by,
    receiving,
)
from tests.snapshots.core.snaps import T0, hand_made, on_demand, ours


def test_a_sanoid_like_template_is_accepted():
    policy = Policy("prod", prefix="pozol", frequently=4, frequent_minutes=15, hourly=48,
                    daily=90, weekly=8, monthly=6, checkpoint=True)
    assert policy.active_periods() == tuple(Period)
    assert policy.count(Period.DAILY) == 90
    assert policy.interval(Period.FREQUENTLY) == timedelta(minutes=15)
    assert policy.interval(Period.MONTHLY) == timedelta(days=31)


def test_a_policy_that_keeps_nothing_is_valid_and_has_no_periods():
    assert Policy("paused").active_periods() == ()


@pytest.mark.parametrize(("kwargs", "field", "words"), [
    ({"hourly": -1}, "hourly", "cannot be negative"),
    ({"daily": 100_000}, "daily", "at most 3660 daily"),
    ({"monthly": 121}, "monthly", "10 years"),
    ({"weekly": 2.5}, "weekly", "whole number"),
    ({"hourly": True}, "hourly", "whole number"),
    ({"hourly": "24"}, "hourly", "whole number"),
    ({"frequent_minutes": 0}, "frequent_minutes", "must divide an hour"),
    ({"frequent_minutes": 7}, "frequent_minutes", "must divide an hour"),
    ({"frequent_minutes": 120}, "frequent_minutes", "must divide an hour"),
    ({"frequent_minutes": -15}, "frequent_minutes", "must divide an hour"),
    ({"prefix": ""}, "prefix", "must not be empty"),
    ({"prefix": "-o"}, "prefix", "must not start with '-'"),
    ({"prefix": "a/b"}, "prefix", "may only use"),
    ({"prefix": "snap@x"}, "prefix", "may only use"),
    ({"prefix": "a b"}, "prefix", "may only use"),
    ({"prefix": "x;rm -rf /"}, "prefix", "may only use"),
    ({"prefix": "été"}, "prefix", "may only use"),
    ({"prefix": "p" * 33}, "prefix", "at most 32"),
    ({"prefix": None}, "prefix", "must not be empty"),
    ({"checkpoint": "yes"}, "checkpoint", "true or false"),
])
def test_bad_input_is_refused_with_the_field_and_a_clear_message(kwargs, field, words):
    with pytest.raises(PolicyError) as refused:
        Policy("prod", **kwargs)
    assert refused.value.field == field
    assert words in str(refused.value)


@pytest.mark.parametrize("name", ["", "-rf", "a/b", "n$(id)", "x" * 65, "tab\tname"])
def test_hostile_policy_names_are_refused(name):
    with pytest.raises(PolicyError) as refused:
        Policy(name)
    assert refused.value.field == "name"


def test_policy_error_is_a_value_error():
    assert issubclass(PolicyError, ValueError)


def test_receiving_keeps_the_source_identity_with_the_links_counts():
    source = Policy("prod", hourly=24, daily=7, frequent_minutes=5, checkpoint=True)
    target = receiving(source, daily=30, monthly=12)
    assert (target.name, target.prefix, target.frequent_minutes) == ("prod", "pozol", 5)
    assert target.active_periods() == (Period.DAILY, Period.MONTHLY)
    assert not target.checkpoint
    with pytest.raises(PolicyError, match="cannot be negative"):
        receiving(source, daily=-1)


def test_the_property_not_the_name_says_whose_a_snapshot_is():
    policy = Policy("p")
    look_alike = hand_made("tank/a", T0, "pozol_p_20260302T000000Z")
    renamed = ours("tank/a", T0, name="before-upgrade")
    assert not owned_by(look_alike, policy)
    assert owned_by(renamed, policy)
    assert not owned_by(ours("tank/a", T0, policy="other"), policy)
    assert not owned_by(on_demand("tank/a", T0, "pozol_now"), policy)


def test_a_policy_property_without_the_owner_is_not_ours():
    forged = SnapshotInfo("tank/a@x", T0, {POLICY_PROPERTY: "p"})
    assert forged.policy_name is None
    assert not owned_by(forged, Policy("p"))


def test_taken_comes_from_the_property_and_falls_back_to_the_creation_time():
    behind = T0 - timedelta(minutes=5)  # the host's clock is behind
    snapshot = SnapshotInfo("tank/a@x", behind, {TAKEN_PROPERTY: "20260302T000000Z"})
    assert snapshot.taken == T0
    garbled = SnapshotInfo("tank/a@x", behind, {TAKEN_PROPERTY: "yesterday"})
    assert garbled.taken == behind


def test_snapshot_info_splits_its_name_and_normalises_to_utc():
    paris = datetime(2026, 3, 2, 1, 0, tzinfo=UTC).astimezone(ZoneInfo("Europe/Paris"))
    snapshot = SnapshotInfo("tank/pg/data@s1", paris, {OWNER_PROPERTY: "pozol"}, 0, ["c"])
    assert (snapshot.dataset, snapshot.name) == ("tank/pg/data", "s1")
    assert snapshot.created.tzinfo is UTC
    assert snapshot.clones == ("c",)
    assert hash(snapshot) == hash(SnapshotInfo("tank/pg/data@s1", paris,
                                               {OWNER_PROPERTY: "pozol"}, 0, ("c",)))
    with pytest.raises(TypeError):
        snapshot.properties["pozol:owner"] = "someone"  # type: ignore[index]


@pytest.mark.parametrize("full_name", ["tank/a", "@x", "tank/a@", "tank/a@x@y"])
def test_snapshot_info_refuses_what_is_not_a_snapshot_name(full_name):
    with pytest.raises(ValueError, match="Not a snapshot name"):
        SnapshotInfo(full_name, T0)


def test_snapshot_info_refuses_a_naive_time_and_negative_holds():
    with pytest.raises(ValueError, match="timezone-aware"):
        SnapshotInfo("tank/a@x", datetime(2026, 3, 2))
    with pytest.raises(ValueError, match="userrefs"):
        SnapshotInfo("tank/a@x", T0, userrefs=-1)
