"""Clones cannot starve production (issue 19 §2), on a real test host over real SSH:
a clone is refused when it would take the pool below its reserve (by the service from
discovery's figures, and by the step from the host's own reading when the pool filled
since); a clone cannot grow past its ZFS quota, while its origin stays up; and the
snapshot PoZoL took for a clone goes with the clone unless something else holds it.
Checked with plain zfs and psql over OpenSSH."""

from __future__ import annotations

import subprocess

import pytest

from apps.clones import services
from apps.clones.core.layout import CLONE_FIRST_WRITES
from apps.clones.models import Clone
from apps.fleet import reserves
from apps.ops.models import Operation
from apps.snapshots.models import Snapshot
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_clones import TABLE, host  # noqa: F401  the fixture
from tests.integration.test_snapshots import destroy, psql, run_anyway

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

MiB = 2**20
FILL = "tank/pozolroom"


def snapshots_on(fleet_host) -> list[str]:
    return run_on(fleet_host, "zfs list -H -t snapshot -o name -r tank/pg").split()


def sync(fleet_host) -> None:
    """zfs-fuse shows new writes in `available` once their transaction group is synced:
    a snapshot waits for it."""
    run_on(fleet_host, f"zfs snapshot {FILL}@sync && zfs destroy {FILL}@sync")


def test_a_clone_is_refused_when_it_would_cross_the_pools_reserve(host):  # noqa: F811
    fleet_host, row = host
    cluster = row.clusters.get()
    free = row.datasets.get(name="tank").available
    # The service's refusal, from discovery's figures: no operation, nothing on the host.
    reserves.set_reserve(row, "tank", reserve_bytes=free - CLONE_FIRST_WRITES + MiB)
    with pytest.raises(services.CloneRefused) as refused:
        services.create_clone(row, cluster, name="toobig")
    assert refused.value.status == 409 and refused.value.code == "no_room"
    message = refused.value.fields["cluster"][0]
    assert message.startswith("pool tank has ") and "a clone may need 256 MiB" in message
    assert not Clone.objects.exists() and not Operation.objects.filter(
        kind="clones.create").exists()

    # Room at discovery, none since: the step reads the pool on the host and refuses
    # before it snapshots or clones anything.
    reserves.set_reserve(row, "tank", reserve_bytes=free - CLONE_FIRST_WRITES - 40 * MiB)
    before = snapshots_on(fleet_host)
    try:
        run_on(fleet_host, f"zfs create -o compression=off {FILL} && dd if=/dev/urandom "
                           f"of=$(zfs get -H -o value mountpoint {FILL})/blob bs=1M count=80 "
                           "status=none")
        sync(fleet_host)
        clone, operation, _ = services.create_clone(row, cluster, name="late")  # "now"
        operation = drive(operation)
        assert operation.status == Operation.Status.FAILED
        assert operation.error_code == "no_room", operation.error
        assert operation.error.startswith("refused: pool tank has ")
        assert "a clone may need 256 MiB" in operation.error
        clone.refresh_from_db()
        assert clone.state == Clone.State.FAILED and "keeps a reserve of" in clone.error
        assert "pozol_clones/late" not in run_on(fleet_host, "zfs list -H -o name")
        assert snapshots_on(fleet_host) == before  # no "now" snapshot either
    finally:
        destroy(fleet_host, FILL)


def test_a_clone_cannot_grow_past_its_quota_and_the_origin_stays_up(host):  # noqa: F811
    fleet_host, row = host
    cluster = row.clusters.get()
    services.update_settings(row, port_min=6500, port_max=6599, listen_address=None,
                             allowed_networks=[], clone_quota=96 * MiB)
    clone, operation, password = services.create_clone(row, cluster, name="capped")
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    root = "tank/pozol_clones/capped"
    assert run_on(fleet_host, f"zfs get -Hp -o value quota {root}").strip() == str(96 * MiB)
    # ~200 MB of random hex (no compression saves it), far past the quota; a temporary
    # table, since the clone's role may not create in schema public (PostgreSQL 15).
    big = subprocess.run(
        ["psql", f"postgresql://{clone.role}:{password}@{clone.layout['listen']}:"
                 f"{clone.port}/postgres", "-XAt", "-c",
         "CREATE TEMP TABLE ballast AS SELECT i, v FROM generate_series(1, 100000) g(i), "
         "LATERAL "
         "(SELECT string_agg(md5(random()::text || i || j), '') AS v "
         "FROM generate_series(1, 32) s(j)) l"],
        capture_output=True, text=True, timeout=300)
    print(f"\nthe clone answered: {big.stderr.strip()[-300:]}")
    assert big.returncode != 0
    assert any(words in big.stderr for words in (
        "could not extend file", "Disk quota exceeded", "No space left on device",
        "could not write")), big.stderr
    used = int(run_on(fleet_host, f"zfs get -Hp -o value used {root}").strip())
    # ZFS enforces a quota per transaction group, so it may pass it by a little.
    assert used <= 100 * MiB, used
    # Production never noticed.
    assert psql(fleet_host, f"SELECT count(*) FROM {TABLE}") == "321"
    psql(fleet_host, f"INSERT INTO {TABLE} VALUES (1)")


def test_the_snapshot_taken_for_a_clone_goes_with_it_unless_held(host):  # noqa: F811
    fleet_host, row = host
    cluster = row.clusters.get()
    before = set(snapshots_on(fleet_host))

    # Destroyed: its "now" snapshot goes too, on the host and in the inventory.
    clone, operation, _ = services.create_clone(row, cluster, name="brief")
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    clone.refresh_from_db()
    taken = set(snapshots_on(fleet_host)) - before
    assert taken and {n.partition("@")[2] for n in taken} == {clone.snapshot}
    assert sorted(clone.own_snapshots) == sorted(n for n in taken)
    assert drive(services.destroy_clone(clone)).status == Operation.Status.SUCCEEDED
    assert set(snapshots_on(fleet_host)) == before
    assert not Snapshot.objects.filter(host=row, name=clone.snapshot).exists()

    # Held by an operator meanwhile: it stays.
    clone, operation, _ = services.create_clone(row, cluster, name="held")
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    clone.refresh_from_db()
    data_snapshot = f"tank/pg/data@{clone.snapshot}"
    run_on(fleet_host, f"zfs hold keep {data_snapshot}")
    try:
        assert drive(services.destroy_clone(clone)).status == Operation.Status.SUCCEEDED
        assert data_snapshot in snapshots_on(fleet_host)
    finally:
        run_anyway(fleet_host, f"zfs release keep {data_snapshot}")

    # Another clone made from it: it stays until that one goes.
    first, operation, _ = services.create_clone(row, cluster, name="first")
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    first.refresh_from_db()
    second, operation, _ = services.create_clone(row, cluster, snapshot=first.snapshot,
                                                 name="second")
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    assert drive(services.destroy_clone(first)).status == Operation.Status.SUCCEEDED
    assert f"tank/pg/data@{first.snapshot}" in snapshots_on(fleet_host)
    assert drive(services.destroy_clone(second)).status == Operation.Status.SUCCEEDED
    assert f"tank/pg/data@{first.snapshot}" not in snapshots_on(fleet_host)


def test_a_failed_clone_removes_the_snapshot_it_took(host):  # noqa: F811
    fleet_host, row = host
    cluster = row.clusters.get()
    before = set(snapshots_on(fleet_host))
    # An address the host does not have: PostgreSQL cannot listen, the creation fails.
    services.update_settings(row, port_min=6500, port_max=6599, listen_address="192.0.2.1",
                             allowed_networks=[])
    clone, operation, _ = services.create_clone(row, cluster, name="doomed")
    operation = drive(operation)
    assert operation.status == Operation.Status.FAILED
    assert operation.error_code == "clone_failed", operation.error
    assert "pozol_clones/doomed" not in run_on(fleet_host, "zfs list -H -o name")
    assert set(snapshots_on(fleet_host)) == before
    # Taken, listed and cloned in one script: recorded from its listing, then destroyed
    # with the failed clone, on the host and in the inventory.
    label = operation.state["snapshot"]
    log = " ".join(operation.log_lines.values_list("text", flat=True))
    assert f"@{label} (recursive)" in log and "taken for what is now gone" in log
    assert not Snapshot.objects.filter(host=row, name=label).exists()
