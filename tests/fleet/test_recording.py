"""Discovery updates a host's rows in place: ids hold, what is gone is handled.

Facts are a real zfs-fuse discovery replayed (tests.remote.fixtures), changed
where a test needs the host to have changed.
"""

from __future__ import annotations

import copy

import pytest
from django.utils import timezone

from apps.benchmarks.models import Benchmark
from apps.fleet import services
from apps.fleet.models import Host
from apps.fleet.recording import match
from apps.fleet.steps import NOT_RECORDED, record_facts, record_new_cluster
from tests.benchmarks.factories import finished


def _ids(host: Host) -> dict[str, list[tuple[str, int]]]:
    return {
        "pools": list(host.pools.values_list("name", "pk")),
        "datasets": list(host.datasets.values_list("name", "pk")),
        "clusters": list(host.clusters.values_list("data_dir", "pk")),
        "disks": list(host.disks.values_list("name", "pk")),
    }


def _cluster_down(host: Host):
    return host.alerts.filter(kind="cluster_down", resolved_at=None).first()


def test_match_pairs_facts_with_rows_of_the_same_key_and_lists_the_rest():
    pairs, rest = match(["a", "b", "c"], [{"k": "b"}, {"k": "d"}, {"k": "b", "x": 1}],
                        lambda row: row, lambda fact: fact["k"])
    assert pairs == [("b", {"k": "b", "x": 1}), (None, {"k": "d"})]
    assert rest == ["a", "c"]


def test_five_discoveries_keep_every_id(replayed_host):
    before = _ids(replayed_host)
    assert all(before.values())
    for _ in range(5):
        record_facts(replayed_host, copy.deepcopy(replayed_host.facts))
    assert _ids(replayed_host) == before


def test_a_changed_value_is_updated_in_place(replayed_host):
    facts = copy.deepcopy(replayed_host.facts)
    pool = replayed_host.pools.get(name=facts["pools"][0]["name"])
    facts["pools"][0]["free"] = 12345
    facts["clusters"][0]["port"] = 6543
    record_facts(replayed_host, facts)
    assert replayed_host.pools.get(pk=pool.pk).free == 12345
    assert replayed_host.clusters.get().port == 6543


def test_a_dataset_gone_is_deleted_and_a_new_one_added(replayed_host):
    facts = copy.deepcopy(replayed_host.facts)
    [cluster] = replayed_host.clusters.all()
    kept = {d.name: d.pk for d in replayed_host.datasets.exclude(name="fast")}
    facts["datasets"] = [d for d in facts["datasets"] if d["name"] != "fast"]
    facts["datasets"].append({**facts["datasets"][0], "name": "tank/new"})
    record_facts(replayed_host, facts)
    names = dict(replayed_host.datasets.values_list("name", "pk"))
    assert "fast" not in names and "tank/new" in names
    assert {name: names[name] for name in kept} == kept
    assert replayed_host.clusters.get().data_dataset_id == cluster.data_dataset_id


def test_a_cluster_not_found_keeps_its_row_marked_down_and_opens_cluster_down(replayed_host):
    facts = copy.deepcopy(replayed_host.facts)
    [cluster] = replayed_host.clusters.all()
    seen = cluster.last_seen_at
    assert cluster.running and seen is not None
    stopped = {**facts, "clusters": []}
    record_facts(replayed_host, stopped)
    record_facts(replayed_host, stopped)
    row = replayed_host.clusters.get()
    assert (row.pk, row.running, row.last_seen_at) == (cluster.pk, False, seen)
    alert = _cluster_down(replayed_host)
    assert alert and cluster.data_dir in alert.message

    record_facts(replayed_host, facts)
    row = replayed_host.clusters.get()
    assert (row.pk, row.running) == (cluster.pk, True) and row.last_seen_at > seen
    assert _cluster_down(replayed_host) is None
    assert replayed_host.alerts.filter(kind="cluster_down").count() == 1


def test_a_row_of_what_the_facts_call_a_clone_is_deleted_without_an_alert(replayed_host):
    facts = copy.deepcopy(replayed_host.facts)
    [cluster] = replayed_host.clusters.all()
    record_facts(replayed_host, {**facts, "clusters": [], "clones": [cluster.data_dir]})
    assert not replayed_host.clusters.exists()
    assert _cluster_down(replayed_host) is None


def test_a_benchmark_keeps_its_cluster_across_discoveries(replayed_host):
    [cluster] = replayed_host.clusters.all()
    bench = finished(replayed_host, 100.0, 1.0, None)
    Benchmark.objects.filter(pk=bench.pk).update(cluster=cluster)
    record_facts(replayed_host, copy.deepcopy(replayed_host.facts))
    bench.refresh_from_db()
    assert bench.cluster_id == cluster.pk


def test_the_operator_retires_a_down_cluster_not_a_running_one(replayed_host, api):
    [cluster] = replayed_host.clusters.all()
    url = f"/api/hosts/{replayed_host.pk}/retire-cluster/"
    retire = lambda: api.post(url, {"cluster": cluster.pk}, format="json")  # noqa: E731
    refused = retire()
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "running"

    record_facts(replayed_host, {**replayed_host.facts, "clusters": []})
    assert _cluster_down(replayed_host) is not None
    assert retire().status_code == 204
    assert not replayed_host.clusters.exists() and _cluster_down(replayed_host) is None
    assert retire().status_code == 404
    assert api.post(url, {"cluster": "1"}, format="json").status_code == 400


def test_work_that_needs_a_down_cluster_running_is_refused_saying_so(replayed_host):
    from apps.benchmarks import services as benchmarks
    from apps.clones import services as clones
    from apps.common.errors import DomainError
    from apps.snapshots import services as snapshots

    record_facts(replayed_host, {**replayed_host.facts, "clusters": []})
    [cluster] = replayed_host.clusters.all()
    attempts = {
        "clone": lambda: clones.create_clone(replayed_host, cluster, name="c1"),
        "benchmark": lambda: benchmarks.run_benchmark(replayed_host, cluster, {}),
        "checkpointed snapshot": lambda: snapshots.snapshot_now(
            replayed_host, cluster=cluster, checkpoint=True),
    }
    for what, attempt in attempts.items():
        with pytest.raises(DomainError) as refused:
            attempt()
        assert "is down" in refused.value.message, what
    with pytest.raises(DomainError) as refused:
        attempts["clone"]()
    assert (refused.value.status, refused.value.code) == (409, "cluster_down")


def test_values_cut_to_fit_still_find_their_rows(replayed_host):
    facts = copy.deepcopy(replayed_host.facts)
    facts["datasets"].append({**facts["datasets"][0], "name": "tank/" + "d" * 300})
    facts["clusters"].append({**facts["clusters"][0], "data_dir": "/" + "p" * 1100})
    record_facts(replayed_host, facts)
    before = _ids(replayed_host)
    record_facts(replayed_host, copy.deepcopy(facts))
    assert _ids(replayed_host) == before
    assert replayed_host.clusters.filter(data_dir="", running=True).count() == 1


def _renamed(fact: dict, old: str, new: str) -> dict:
    return {**fact, "name": new + fact["name"].removeprefix(old)}


def test_a_made_cluster_is_added_beside_the_rows_and_facts_of_the_last_discovery(
        replayed_host):
    """What provisioning records after making a cluster: its rows and facts added, no
    other row touched; a cluster retired since the last discovery (its row gone, its
    facts still there) does not come back."""
    facts = replayed_host.facts
    old = replayed_host.clusters.get()
    fact = next(c for c in facts["clusters"] if c["data_dir"] == old.data_dir)
    datasets = [_renamed(d, "tank/pg", "tank/postgres/app") for d in facts["datasets"]
                if d["name"] == "tank/pg" or d["name"].startswith("tank/pg/")]
    made = {**fact, "data_dir": "/tank/postgres/app/data/pgdata", "port": 5499,
            "data_dataset": "tank/postgres/app/data", "wal_dataset": "tank/postgres/app/wal"}
    before = set(replayed_host.datasets.values_list("name", flat=True))
    old.delete()  # retired meanwhile

    assert record_new_cluster(replayed_host, made, datasets, "tank/postgres/app",
                              timezone.now())

    row = replayed_host.clusters.get()
    assert (row.data_dir, row.port) == ("/tank/postgres/app/data/pgdata", 5499)
    assert (row.data_dataset.name, row.wal_dataset.name) == ("tank/postgres/app/data",
                                                             "tank/postgres/app/wal")
    after = set(replayed_host.datasets.values_list("name", flat=True))
    assert after == before | {d["name"] for d in datasets}
    replayed_host.refresh_from_db()
    assert [c["data_dir"] for c in replayed_host.facts["clusters"]] == [
        old.data_dir, "/tank/postgres/app/data/pgdata"]
    assert {d["name"] for d in datasets} <= {d["name"] for d in replayed_host.facts["datasets"]}


def _retired_by_hand(host: Host):
    """The host's cluster stopped (a discovery finds it down) and retired by the
    operator, datasets kept; its row as it was before."""
    [cluster] = host.clusters.all()
    record_facts(host, {**host.facts, "clusters": []})
    services.retire_cluster(host, cluster.pk)
    assert not host.clusters.exists()
    return cluster


def test_facts_read_before_a_retire_do_not_bring_the_cluster_back(replayed_host):
    """A discovery read the host while the cluster ran, then the operator stopped and
    retired it, then that discovery records: the cluster stays retired, and the
    summary names what was left out."""
    read, read_at = copy.deepcopy(replayed_host.facts), timezone.now()
    cluster = _retired_by_hand(replayed_host)

    summary = record_facts(replayed_host, read, read_at=read_at)

    assert not replayed_host.clusters.exists() and _cluster_down(replayed_host) is None
    assert summary[NOT_RECORDED] == [cluster.data_dir] and summary["clusters"] == 0
    replayed_host.refresh_from_db()
    assert replayed_host.facts["clusters"] == []
    # Kept by the retire, the datasets are the host's still.
    assert replayed_host.datasets.filter(name=cluster.data_dataset.name).exists()


def test_facts_read_after_a_retire_record_a_cluster_there_again(replayed_host):
    """Made again at the same data directory (by hand, say), a cluster a discovery
    reads after the retire is the host's: recorded, running."""
    read = copy.deepcopy(replayed_host.facts)
    cluster = _retired_by_hand(replayed_host)
    replayed_host.refresh_from_db()
    assert replayed_host.facts["clusters"] == []  # the retire forgot it in the facts too

    summary = record_facts(replayed_host, read, read_at=timezone.now())

    assert NOT_RECORDED not in summary
    row = replayed_host.clusters.get()
    assert (row.data_dir, row.running) == (cluster.data_dir, True)
    replayed_host.refresh_from_db()
    assert [c["data_dir"] for c in replayed_host.facts["clusters"]] == [cluster.data_dir]


def test_a_made_cluster_read_before_its_retire_is_not_recorded(replayed_host):
    """Provisioning's own record of a cluster it made follows the same rule."""
    fact = copy.deepcopy(replayed_host.facts["clusters"][0])
    read_at = timezone.now()
    _retired_by_hand(replayed_host)
    assert not record_new_cluster(replayed_host, fact, [], "tank/pg", read_at)
    assert not replayed_host.clusters.exists()
    assert record_new_cluster(replayed_host, fact, [], "tank/pg", timezone.now())
    assert replayed_host.clusters.get().data_dir == fact["data_dir"]


def test_a_tombstone_goes_at_the_first_recording_a_day_after_the_retire(replayed_host):
    """A day after the retire no discovery that read the host before it can still be
    recording, so the tombstone no longer guards anything and goes; a younger one stays."""
    from datetime import timedelta

    from apps.fleet.recording import TOMBSTONE_KEPT

    read = copy.deepcopy(replayed_host.facts)
    _retired_by_hand(replayed_host)
    tombstone = replayed_host.retired_clusters.get()

    record_facts(replayed_host, {**read, "clusters": []},
                 read_at=tombstone.retired_at + TOMBSTONE_KEPT - timedelta(minutes=1))
    assert replayed_host.retired_clusters.filter(pk=tombstone.pk).exists()

    record_facts(replayed_host, {**read, "clusters": []},
                 read_at=tombstone.retired_at + TOMBSTONE_KEPT + timedelta(minutes=1))
    assert not replayed_host.retired_clusters.exists()
