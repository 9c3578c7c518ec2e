"""A test host whose cluster is in Debian's packaged layout (issue 21): its
configuration in /etc/postgresql/15/main (the host's own, apps/demo/fleet debian=...),
started with `-c config_file=` as pg_ctlcluster does, no systemd. Discovery records the
layout; a profile's restart goes through pg_ctl (nothing else runs it there); a clone is
made, queried, reset and destroyed, a restore drill passes and a dropped table comes
back, and the origin's configuration files are byte for byte what they were."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pytest

from apps.clones import services as clones
from apps.clones.models import Clone
from apps.demo.fleet import down, up
from apps.fleet.models import PgCluster
from apps.ops.models import Operation
from apps.snapshots.models import Snapshot
from apps.tuning import services as tuning
from apps.tuning.models import PlanChange
from tests.conftest import TEST_FLEET_SUBNET
from tests.driving import drive
from tests.integration.conftest import run_on, show
from tests.integration.test_clones import connect
from tests.integration.test_drills import drill, leftovers, snapshot_now
from tests.integration.test_recover_table import recover
from tests.integration.test_snapshots import discovered, psql

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

# Far above the session fleet's hosts (1 to 3) and the PostgreSQL 18 host (18).
INDEX = 21
ETC = "/etc/postgresql/15/main"


@pytest.fixture(scope="module")
def debian_host():
    state_dir = Path(tempfile.mkdtemp(prefix="pozol-test-debian-"))
    try:
        yield up(1, state_dir=state_dir, subnet=TEST_FLEET_SUBNET, first=INDEX,
                 debian={INDEX})[0]
    finally:
        down(state_dir)


@pytest.fixture
def no_clone_left():
    yield
    for clone in Clone.objects.exclude(state=Clone.State.DESTROYED):
        drive(clones.destroy_clone(clone))


def checksums(fleet_host) -> dict[str, str]:
    """Every file of the origin's configuration directory, read from the machine."""
    root = Path(fleet_host.etc_postgresql_dir)
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_packaged_cluster_is_discovered_restarted_cloned_drilled_and_recovered(
        api, debian_host, no_clone_left):
    assert debian_host.pg_config_file == f"{ETC}/postgresql.conf"
    assert run_on(debian_host, f"ls {ETC}").split() == [
        "conf.d", "pg_hba.conf", "pg_ident.conf", "postgresql.conf", "server.crt", "server.key"]
    assert "postgresql.conf" not in run_on(debian_host, f"ls {debian_host.pg_data_dir}")
    before = checksums(debian_host)

    host = discovered(debian_host)
    cluster = PgCluster.objects.get(host=host)
    assert (cluster.config_file, cluster.hba_file, cluster.ident_file) == (
        f"{ETC}/postgresql.conf", f"{ETC}/pg_hba.conf", f"{ETC}/pg_ident.conf")
    assert cluster.packaged_as == "15/main" and cluster.external_configuration
    assert cluster.systemd_unit == "" and not cluster.pg_ctlcluster
    assert not host.facts["has_systemd"]
    assert "/pg_ctl" in cluster.target().control("restart").text

    # A restart by a profile's apply: pg_ctl, and the postmaster keeps its config_file.
    profile = tuning.create_profile(name="Debian restart", settings={
        "zfs": {}, "module": {}, "sysctl": {}, "postgres": {"max_connections": "90"}})
    plan = tuning.make_plan(host, version=profile.current)
    assert {c.key: c.method for c in plan.changes.all()}["max_connections"] == "pg_restart"
    applied = drive(tuning.apply_plan(plan, allow_restart=True))
    assert applied.status == Operation.Status.SUCCEEDED, applied.error
    assert {c.status for c in plan.changes.all()} == {PlanChange.Status.APPLIED}
    assert show(debian_host, "max_connections") == "90"
    assert show(debian_host, "config_file") == f"{ETC}/postgresql.conf"

    psql(debian_host, "CREATE TABLE pozol_debian AS SELECT generate_series(1, 15) AS id")
    first = snapshot_now(host)
    clone, operation, password = clones.create_clone(host, cluster, name="debian",
                                                      snapshot=first)
    operation = drive(operation)
    clone.refresh_from_db()
    assert operation.status == Operation.Status.SUCCEEDED, clone.error or operation.error
    assert clone.state == Clone.State.READY
    assert connect(clone, password, "SELECT count(*) FROM pozol_debian") == "15"
    # Its own files, not the origin's; its own pid file; no ssl key it cannot read.
    # As PoZoL reads it (root, the owner role over the clone's socket): these settings
    # are hidden from the clone's role.
    settings = run_on(debian_host, (
        f"{debian_host.pg_bin_dir}/psql -X -At -h {clone.layout['socket_dir']} "
        f"-p {clone.port} -U {debian_host.pg_os_user} -d postgres -c \"SELECT "
        "string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings WHERE name "
        "IN ('config_file', 'hba_file', 'ssl', 'external_pid_file', 'data_directory')\""))
    data_dir = settings.split("data_directory=")[1].split()[0]
    assert "pozol_clones/debian" in data_dir
    assert f"config_file={data_dir}/postgresql.conf" in settings
    assert f"hba_file={data_dir}/pg_hba.conf" in settings
    assert "ssl=off" in settings and "external_pid_file= " in settings + " "
    # conf.d came along: the origin's listening lines are there, overridden by the clone's.
    assert "50-listen.conf" in run_on(debian_host, f"ls {data_dir}/conf.d")
    # Started directly as its own uid, never through the origin's configuration.
    postmaster = [line for line in run_on(debian_host, "ps -eo uid=,args=").splitlines()
                  if "pozol_clones/debian" in line and "-D" in line]
    assert postmaster and int(postmaster[0].split()[0]) == clone.layout["os_uid"]
    assert ETC not in postmaster[0]

    psql(debian_host, "INSERT INTO pozol_debian SELECT generate_series(16, 20)")
    second = snapshot_now(host)
    reset = drive(clones.reset_clone(clone, snapshot=second))
    assert reset.status == Operation.Status.SUCCEEDED, reset.error
    assert connect(clone, password, "SELECT count(*) FROM pozol_debian") == "20"
    assert drive(clones.destroy_clone(clone)).status == Operation.Status.SUCCEEDED
    assert leftovers(debian_host, "debian") == ""

    created = api.post("/api/drill-schedules/", {"host": host.pk, "cluster": cluster.pk},
                       format="json")
    assert created.status_code == 201, created.content
    passed = drill(api, created.json()["id"])
    assert passed["status"] == "passed", (passed["error"], passed["log_tail"])
    assert leftovers(debian_host, "pozol-drill") == ""

    psql(debian_host, "DROP TABLE pozol_debian")
    snapshot = Snapshot.objects.get(host=host, dataset=cluster.data_dataset.name, name=second)
    recovered = recover(api, snapshot, database="postgres", table="pozol_debian",
                        into="pozol_debian_back")
    assert recovered.status == Operation.Status.SUCCEEDED, recovered.error
    assert recovered.result["rows"] == 20
    assert psql(debian_host, "SELECT count(*) FROM pozol_debian_back") == "20"
    assert leftovers(debian_host, "pozol-recover") == ""

    assert checksums(debian_host) == before
