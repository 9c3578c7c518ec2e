"""A test host running PostgreSQL 18 (npm's server binaries, the machine's 15 client
programs; apps/demo/fleet/pgbin.py) in a fleet of its own: discovery reads its version
and settings, a profile with 18's io_method is validated against 18's table, planned,
applied with a restart and read back, and a snapshot of it is cloned and queried."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from apps.clones import services as clones
from apps.clones.models import Clone
from apps.demo.fleet import down, up
from apps.fleet.models import PgCluster
from apps.ops.models import Operation
from apps.snapshots import services as snapshots
from apps.tuning import services as tuning
from apps.tuning.core import pgsettings
from apps.tuning.models import PlanChange
from tests.conftest import TEST_FLEET_SUBNET
from tests.driving import drive
from tests.integration.conftest import run_on, show
from tests.integration.test_clones import connect
from tests.integration.test_snapshots import discovered, psql

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

# Far above the session fleet's hosts (1 to 3) on the same subnet, so both may be up.
INDEX = 18


@pytest.fixture(scope="module")
def pg18_host():
    state_dir = Path(tempfile.mkdtemp(prefix="pozol-test-pg18-"))
    try:
        yield up(1, state_dir=state_dir, subnet=TEST_FLEET_SUBNET, first=INDEX,
                 majors={INDEX: 18})[0]
    finally:
        down(state_dir)


def test_a_postgresql_18_host_is_discovered_tuned_snapshotted_and_cloned(pg18_host):
    assert pg18_host.pg_major == 18
    assert psql(pg18_host, "show server_version_num").startswith("18")

    host = discovered(pg18_host)
    cluster = PgCluster.objects.get(host=host)
    assert cluster.server_version_num // 10000 == 18
    assert cluster.bin_dir == pg18_host.pg_bin_dir
    facts = host.typed_facts().clusters[0]
    rows = {row.name: row for row in facts.settings}
    assert rows["io_method"].setting == "worker" and rows["io_method"].context == "postmaster"
    assert "summarize_wal" in rows and "vacuum_defer_cleanup_age" not in rows
    # The committed table of 18 is what this server says, row for row.
    table = pgsettings.table(18)
    assert set(rows) == {spec.name for spec in table.values()}
    assert all((row.vartype, row.unit) == (table[name.lower()].vartype, table[name.lower()].unit)
               for name, row in rows.items())

    profile = tuning.create_profile(name="PG 18 I/O", settings={
        "zfs": {}, "module": {}, "sysctl": {},
        "postgres": {"io_method": "sync", "io_workers": "5"}})
    plan = tuning.make_plan(host, version=profile.current)
    changes = {c.key: c for c in plan.changes.all()}
    assert changes["io_method"].method == "pg_restart" and changes["io_method"].current == "worker"
    applied = drive(tuning.apply_plan(plan, allow_restart=True))
    assert applied.status == Operation.Status.SUCCEEDED, applied.error
    assert {c.status for c in plan.changes.all()} == {PlanChange.Status.APPLIED}
    assert (show(pg18_host, "io_method"), show(pg18_host, "io_workers")) == ("sync", "5")

    psql(pg18_host, "CREATE TABLE pozol_pg18 AS SELECT generate_series(1, 18) AS id")
    taken = drive(snapshots.snapshot_now(host, cluster=cluster))
    assert taken.status == Operation.Status.SUCCEEDED, taken.error
    clone, operation, password = clones.create_clone(host, cluster, name="pg18",
                                                      snapshot=taken.state["snapshot"])
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    clone.refresh_from_db()
    assert clone.state == Clone.State.READY
    assert connect(clone, password, "SELECT current_setting('server_version_num')::int / 10000"
                                    " || ' ' || (SELECT count(*) FROM pozol_pg18)") == "18 18"
    assert drive(clones.destroy_clone(clone)).status == Operation.Status.SUCCEEDED
    assert "pozol_clones/pg18" not in run_on(pg18_host, "zfs list -H -o name")
