"""Clone requests are checked before anything runs: names, roles, snapshots, ports, memory,
protection and expiry. The operations are started, not run (tests/integration/test_clones.py
runs them on a real host)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.clones import services
from apps.clones.core.layout import CLONE_MEMORY
from apps.clones.models import Clone, CloneHostSettings
from apps.common.errors import Conflict
from apps.fleet import reserves
from apps.fleet.models import Dataset, Pool
from apps.ops.models import Operation
from tests.clones import factories as clones
from tests.snapshots import factories

pytestmark = pytest.mark.django_db
SNAP = "pozol_manual_20261123T190000Z"


@pytest.fixture
def origin():
    host = factories.host("db1")
    Dataset.objects.filter(host=host, name="tank/pg/data").update(mountpoint="/tank/pg/data")
    Dataset.objects.filter(host=host, name="tank/pg/wal").update(mountpoint="/tank/pg/wal")
    cluster = factories.cluster(host, data_dir="/tank/pg/data/pgdata",
                                wal_dir="/tank/pg/wal/pg_wal")
    for dataset in ("tank/pg/data", "tank/pg/wal"):
        factories.snapshot(host, f"{dataset}@{SNAP}")
    return host, cluster


def make(origin, **changes):
    host, cluster = origin
    return services.create_clone(host, cluster, **{"snapshot": SNAP, **changes})


def test_a_clone_gets_the_first_free_port_a_password_and_an_operation(origin, delivered):
    first, operation, password = make(origin, name="a")
    second, _, other = make(origin, name="b")
    assert (first.port, second.port) == (6500, 6501)
    assert len(password) == 24 and password != other
    assert password not in str(operation.state)
    assert operation.kind == "clones.create" and first.state == Clone.State.CREATING
    assert first.decoded_layout().data_clone == "tank/pozol_clones/a/data"


@pytest.mark.parametrize(("changes", "field"), [
    ({"name": "a;b"}, "name"), ({"name": "-a"}, "name"), ({"name": "A'b"}, "name"),
    ({"role": "x; drop"}, "role"), ({"role": "postgres"}, "role"),
    ({"snapshot": "nope"}, "snapshot"), ({"snapshot": "a@b"}, "snapshot"),
    ({"ttl": timedelta(days=365)}, "ttl"), ({"ttl": timedelta(seconds=1)}, "ttl"),
])
def test_bad_requests_are_refused_naming_the_field(origin, changes, field):
    with pytest.raises(services.CloneRefused) as refused:
        make(origin, **changes)
    assert field in refused.value.fields
    assert not Clone.objects.exists()


def test_a_host_registered_by_name_needs_a_listen_address_for_its_clones(origin, delivered):
    host, _ = origin
    host.address = "demo-host"  # as docker-compose.yml's demo host is registered
    host.save()
    with pytest.raises(services.CloneRefused) as refused:
        make(origin, name="a")
    assert refused.value.status == 400
    assert "'demo-host' is a name" in refused.value.fields["listen_address"][0]
    assert not Clone.objects.exists()
    CloneHostSettings.objects.create(host=host, listen_address="172.18.0.5")
    clone, _, _ = make(origin, name="a")
    assert clone.decoded_layout().listen == "172.18.0.5"


def test_a_taken_name_is_a_conflict(origin, delivered):
    make(origin, name="a")
    with pytest.raises(services.CloneRefused) as refused:
        make(origin, name="a")
    assert refused.value.status == 409


def test_the_memory_limit_and_the_port_range_are_kept(origin, delivered):
    host, _ = origin
    CloneHostSettings.objects.create(host=host, port_min=7000, port_max=7001,
                                     memory_limit=3 * CLONE_MEMORY)
    make(origin, name="a")
    make(origin, name="b")
    with pytest.raises(services.CloneRefused, match="every port"):
        make(origin, name="c")
    CloneHostSettings.objects.filter(host=host).update(port_max=7010, memory_limit=2 * CLONE_MEMORY)
    with pytest.raises(services.CloneRefused, match="over its limit") as refused:
        make(origin, name="c")
    assert refused.value.status == 409


def test_a_protected_clone_is_kept_and_an_expired_one_is_destroyed(origin, delivered):
    kept, _, _ = make(origin, name="a", protected_for=timedelta(hours=1),
                      ttl=timedelta(minutes=5))
    gone, _, _ = make(origin, name="b", ttl=timedelta(minutes=5))
    Clone.objects.update(state=Clone.State.READY)
    Operation.objects.update(status=Operation.Status.SUCCEEDED)  # both were made
    with pytest.raises(Conflict, match="protected"):
        services.destroy_clone(kept)
    started = services.expire(timezone.now() + timedelta(minutes=10))
    assert [op.state["clone"] for op in started] == [gone.pk]
    assert Clone.objects.get(pk=gone.pk).state == Clone.State.DESTROYING


def test_a_clone_whose_destroy_ended_unfinished_is_failed_and_destroyed_again(origin,
                                                                             delivered):
    """Its workers kept dying until the operation ran out of attempts: the clones tick
    fails the clone with the operation's words, and a retry (here, expiry) takes it."""
    clone, _, _ = make(origin, name="a", ttl=timedelta(minutes=5))
    Clone.objects.update(state=Clone.State.READY)
    Operation.objects.update(status=Operation.Status.SUCCEEDED)
    first = services.destroy_clone(clone)
    assert services.settle_interrupted() == []  # its destroy has not ended
    Operation.objects.filter(pk=first.pk).update(
        status=Operation.Status.FAILED, error_code="attempts",
        error="step 'destroy' did not complete after 5 attempts")
    assert [c.pk for c in services.settle_interrupted()] == [clone.pk]
    clone.refresh_from_db()
    assert clone.state == Clone.State.FAILED
    assert f"#{first.pk}" in clone.error and "after 5 attempts" in clone.error
    assert services.settle_interrupted() == []

    again = services.expire(timezone.now() + timedelta(minutes=10))
    assert [op.kind for op in again] == ["clones.destroy"] and again[0].pk != first.pk
    assert Clone.objects.get(pk=clone.pk).state == Clone.State.DESTROYING


# ---- room and quota (issue 19) --------------------------------------------------------------

def fill(host, *, used: int, available: int) -> None:
    """The pool's root dataset as discovery read it."""
    Dataset.objects.filter(host=host, name="tank").update(used=used, available=available)


def test_a_clone_is_refused_with_the_figures_when_it_would_cross_the_pools_reserve(
        origin, delivered):
    host, _ = origin
    fill(host, used=700 * 2**20, available=300 * 2**20)  # reserve 10%: 100 MiB
    with pytest.raises(services.CloneRefused) as refused:
        make(origin, name="big")
    assert refused.value.status == 409 and refused.value.code == "no_room"
    assert refused.value.fields["cluster"] == [
        "pool tank has 300 MiB free and keeps a reserve of 100 MiB (10% of the pool); a "
        "clone may need 256 MiB: free space on the pool or lower its reserve"]
    assert not Clone.objects.exists() and not Operation.objects.exists()
    Pool.objects.create(host=host, name="tank")
    reserves.set_reserve(host, "tank", reserve_bytes=44 * 2**20)
    clone, operation, _ = make(origin, name="fits")
    assert operation.state["room"] == {"pools": ["tank"], "needed": 256 * 2**20,
                                       "what": "a clone"}


def test_a_clone_gets_the_hosts_quota_and_needs_no_more_room_than_its_quota(
        origin, delivered):
    host, _ = origin
    fill(host, used=700 * 2**20, available=300 * 2**20)
    services.update_settings(host, port_min=6500, port_max=6599, listen_address=None,
                             allowed_networks=[], clone_quota=128 * 2**20)
    clone, operation, _ = make(origin, name="small")
    assert clone.quota == 128 * 2**20  # so its first writes are at most that
    assert operation.state["room"]["needed"] == 128 * 2**20
    assert CloneHostSettings.objects.get().clone_quota == 128 * 2**20
    with pytest.raises(services.CloneRefused) as refused:
        services.update_settings(host, port_min=6500, port_max=6599, listen_address=None,
                                 allowed_networks=[], clone_quota=2**20)
    assert "clone_quota" in refused.value.fields


def test_a_clone_from_now_records_the_snapshots_it_takes(origin, delivered):
    host, cluster = origin
    clone, operation, _ = services.create_clone(host, cluster, name="fresh")
    name = operation.state["snapshot"]
    # (tank/pg holds data and WAL alone: one recursive snapshot of it)
    assert clone.own_snapshots == [f"tank/pg@{name}", f"tank/pg/data@{name}",
                                   f"tank/pg/wal@{name}"]
    assert make(origin, name="old")[0].own_snapshots == []  # an existing snapshot: not ours


def test_a_clone_made_before_quotas_gets_the_hosts_on_reset(origin, delivered):
    host, _ = origin
    old = clones.clone(host, name="old", quota=None)
    operation = services.reset_clone(old)
    old.refresh_from_db()
    assert old.quota == 8 * 2**30 and operation.state["room"]["needed"] == 256 * 2**20
