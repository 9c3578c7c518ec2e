"""The pool_capacity alert: its text from facts (pure), and discovery's record step
raising, updating and resolving it."""

from __future__ import annotations

import copy

import pytest

from apps.alerts.models import Alert, Rule
from apps.fleet.capacity import pool_capacity_message
from apps.fleet.steps import record_facts
from apps.remote.facts import zfs
from apps.remote.facts.host import Dataset, Pool, dataset_from
from tests.html import parse
from tests.remote.fixtures.hosts import fuse_extra

MiB = 1 << 20


def pool(name: str, capacity: int | None) -> Pool:
    return Pool(name, "ONLINE", 1 << 30, None, None, None, capacity, None, None, True)


def dataset(name: str, by_snapshots: int | None) -> Dataset:
    return Dataset(name, "filesystem", None, None, None, None, True, None,
                   usedbysnapshots=by_snapshots)


def test_at_or_below_the_threshold_there_is_no_alert():
    datasets = [dataset("tank/a", 500 * MiB)]
    assert pool_capacity_message([pool("tank", 80)], datasets, 80) is None
    assert pool_capacity_message([pool("tank", 79), pool("fast", 0)], datasets, 80) is None
    assert pool_capacity_message([pool("tank", None)], datasets, 80) is None  # not known


def test_a_full_pool_names_its_largest_snapshot_holders_in_iec_units():
    datasets = [dataset("tank", 0), dataset("tank/pg/data", 380 * MiB),
                dataset("tank/pg/wal", 2 * MiB), dataset("tank/scratch", 30 * MiB),
                dataset("tank/tiny", 1 * MiB), dataset("tanker/x", 900 * MiB)]
    message = pool_capacity_message([pool("tank", 86), pool("tanker", 10)], datasets, 80)
    # The sum covers every dataset of the pool; three are named, largest first;
    # tanker/x is in another pool.
    assert message == ("pool tank is 86% full; snapshots hold 413 MiB: "
                       "tank/pg/data 380 MiB, tank/scratch 30.0 MiB, tank/pg/wal 2.0 MiB")


def test_each_full_pool_is_named_and_unknown_usage_is_said_to_be_unknown():
    datasets = [dataset("tank/a", 0), dataset("fast/b", None)]
    message = pool_capacity_message([pool("tank", 81), pool("fast", 95)], datasets, 80)
    assert message == ("pool tank is 81% full; snapshots hold 0 B; "
                       "pool fast is 95% full; snapshot usage not known")


def test_the_threshold_is_a_parameter():
    assert pool_capacity_message([pool("tank", 60)], [], 50) == (
        "pool tank is 60% full; snapshot usage not known")


def test_from_usedbysnapshots_captured_on_a_test_host():
    props = zfs.parse_zfs_get(fuse_extra("zfs_get_usedbysnapshots"))
    rows = zfs.parse_zfs_list(fuse_extra("zfs_list_human"))
    datasets = [dataset_from(r, props[r.name]) for r in rows if r.name in props]
    message = pool_capacity_message([pool("tank", 86)], datasets, 80)
    assert message == "pool tank is 86% full; snapshots hold 15.5 MiB: tank/pg/data 15.5 MiB"


# ---- discovery's record step -------------------------------------------------------------

def full(facts: dict, capacity: int, data_by_snapshots: int) -> dict:
    changed = copy.deepcopy(facts)
    for p in changed["pools"]:
        p["capacity"] = capacity if p["name"] == "tank" else 1
    for d in changed["datasets"]:
        d["usedbysnapshots"] = data_by_snapshots if d["name"] == "tank/pg/data" else 0
    return changed


def open_alerts(host) -> list[Alert]:
    return list(host.alerts.filter(kind="pool_capacity", resolved_at=None))


@pytest.mark.django_db
def test_discovery_raises_the_alert_once_keeps_it_current_and_resolves_it(builtin_rules,
                                                                         replayed_host,
                                                                         settings):
    facts = replayed_host.facts
    assert open_alerts(replayed_host) == []  # the captured pools are nearly empty

    record_facts(replayed_host, full(facts, 86, 400 * MiB))
    [alert] = open_alerts(replayed_host)
    assert alert.message == ("pool tank is 86% full; snapshots hold 400 MiB: "
                             "tank/pg/data 400 MiB")

    record_facts(replayed_host, full(facts, 90, 420 * MiB))
    [again] = open_alerts(replayed_host)
    assert again.pk == alert.pk and again.message.startswith("pool tank is 90% full")

    record_facts(replayed_host, full(facts, 80, 420 * MiB))
    assert open_alerts(replayed_host) == []
    assert Alert.objects.get(pk=alert.pk).resolved_at is not None

    # The threshold is the operator's pool_capacity rule (POZOL_POOL_CAPACITY_ALERT
    # is its default): discovery follows an edit at once.
    Rule.objects.filter(kind="pool_capacity").update(threshold=70)
    record_facts(replayed_host, full(facts, 75, 0))
    [lower] = open_alerts(replayed_host)
    assert lower.pk != alert.pk and lower.message == "pool tank is 75% full; snapshots hold 0 B"


@pytest.mark.django_db
def test_the_host_page_shows_what_snapshots_hold_per_dataset(replayed_host, signed_in):
    record_facts(replayed_host, full(replayed_host.facts, 10, 16277504))
    table = parse(signed_in.get(f"/hosts/{replayed_host.pk}/datasets/").content).find(
        "table", id="datasets")
    assert [th.text for th in table.find_all("th")][:3] == ["Dataset", "Used", "Snapshots"]
    rows = {row[0]: row for row in table.rows()}
    assert rows["tank/pg/data"][2] == "15.5M" and rows["tank/pg/wal"][2] == "0"


@pytest.mark.django_db
def test_snapshot_usage_not_known_is_shown_as_unknown(replayed_host, signed_in):
    facts = copy.deepcopy(replayed_host.facts)
    for d in facts["datasets"]:
        del d["usedbysnapshots"]  # as an older discovery recorded them
    record_facts(replayed_host, facts)
    table = parse(signed_in.get(f"/hosts/{replayed_host.pk}/datasets/").content).find(
        "table", id="datasets")
    assert {row[2] for row in table.rows()} == {"—"}
