"""A snapshot policy on a real test host: it takes a cluster's snapshots on an accelerated
schedule (every minute, keep 2), prunes them to its count, and leaves alone a hand-made
snapshot, a held one and one with a clone, which the test makes.

The clock is moved, not waited for: policies.tick(now) is what the periodic task
runs with the current time. Everything made here is destroyed afterwards: the hosts
are shared by the whole session.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.ops.models import Operation
from apps.snapshots import policies
from apps.snapshots.models import SnapshotPolicy
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_snapshots import destroy, discovered, run_anyway

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

NAME = "every-minute"
CLONE = "tank/policy_clone"


def snapshots_on(fleet_host) -> set[str]:
    """Every snapshot name, read with plain zfs over OpenSSH."""
    return set(run_on(fleet_host, "zfs list -H -t snapshot -o name").split())


def tick_and_drive(now) -> Operation:
    started = policies.tick(now)
    assert len(started) == 1, started
    operation = drive(started[0])
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    return operation


def test_a_policy_takes_and_prunes_and_spares_hand_made_held_and_cloned(fleet_hosts, delivered):
    fleet_host = fleet_hosts[0]
    host = discovered(fleet_host)
    cluster = host.clusters.get()
    policy = SnapshotPolicy.objects.create(name=NAME, frequently=2, frequent_minutes=1)
    policies.assign(policy, host, cluster_data_dir=cluster.data_dir)
    run_on(fleet_host, "zfs snapshot tank/pg/data@policy_byhand")
    base = timezone.now().replace(second=5, microsecond=0)
    names = []
    try:
        for minute in range(6):
            now = base + timedelta(minutes=minute)
            operation = tick_and_drive(now)
            names.append(operation.state["snapshot"])
            assert policies.tick(now + timedelta(seconds=20)) == []  # this slot is taken
            if minute == 0:
                run_on(fleet_host, f"zfs hold keep tank/pg/data@{names[0]}")
            if minute == 1:
                run_on(fleet_host, f"zfs clone tank/pg/data@{names[1]} {CLONE}")
        log = " ".join(operation.log_lines.values_list("text", flat=True))
        assert f"destroyed tank/pg/data@{names[3]}" in log

        on_host = snapshots_on(fleet_host)
        assert "tank/pg/data@policy_byhand" in on_host
        for dataset in ("tank/pg/data", "tank/pg/wal"):
            kept = {n for n in names if f"{dataset}@{n}" in on_host}
            # held (0), cloned (1), and the 2 newest; a cluster snapshot stays whole.
            assert kept == {names[0], names[1], names[4], names[5]}, (dataset, kept)
        assert operation.result["destroyed"]

        # One operation per target at a time: a tick while one runs starts none.
        later = base + timedelta(minutes=6)
        first = policies.tick(later)
        assert len(first) == 1
        assert policies.tick(later + timedelta(minutes=1)) == []
        assert drive(first[0]).status == Operation.Status.SUCCEEDED

    finally:
        if names:
            run_anyway(fleet_host, f"zfs release keep tank/pg/data@{names[0]}")
        if CLONE in run_anyway(fleet_host, "zfs list -H -o name").split():
            destroy(fleet_host, CLONE)
        leftovers = [n for n in snapshots_on(fleet_host)
                     if f"@pozol_{NAME}_" in n or n.endswith("@policy_byhand")]
        if leftovers:
            destroy(fleet_host, *leftovers)
