"""A cluster owned by an OS user other than postgres, with a hyphen in its name
(pg-admin): discovered, tuned and benchmarked on a real host, through the one
cluster target of apps.remote.cluster. Before it, tuning checked the owner as a
PostgreSQL identifier and refused every apply on such a cluster."""

from pathlib import Path

import pytest

from apps.benchmarks import services as benchmarks
from apps.demo.fleet import up
from apps.fleet.models import PgCluster
from apps.remote import ssh
from apps.remote.errors import CommandFailed
from apps.tuning import appliers, services
from apps.tuning.models import PlanChange
from tests.conftest import TEST_FLEET_SUBNET
from tests.driving import drive
from tests.integration.conftest import register, run_on, show

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

OWNER = "pg-admin"


@pytest.fixture(scope="module")
def pg_admin_host(fleet_hosts):
    """Host 3 of the session's fleet, its cluster owned by pg-admin; the session's
    down takes it down with the others."""
    state_dir = Path(fleet_hosts[0].known_hosts_path).parent  # the session fleet's state dir
    return up(3, state_dir=state_dir, subnet=TEST_FLEET_SUBNET, owners={3: OWNER})[2]


def logged(operation) -> str:
    return "\n".join(operation.log_lines.values_list("text", flat=True))


def test_a_cluster_owned_by_pg_admin_is_discovered_tuned_and_benchmarked(
        pg_admin_host, delivered):
    assert pg_admin_host.pg_os_user == OWNER
    assert run_on(pg_admin_host, f"stat -c %U {pg_admin_host.pg_data_dir}").strip() == OWNER

    host = register(pg_admin_host)
    discovery = drive(host.operations.get())
    assert discovery.status == "succeeded", discovery.error
    host.refresh_from_db()
    cluster = PgCluster.objects.get(host=host)
    assert (cluster.owner, cluster.data_dir) == (OWNER, pg_admin_host.pg_data_dir)
    assert cluster.server_version_num and cluster.server_version_num // 10000 == 15
    assert "could not change directory" not in logged(discovery)

    work_mem = "7MB" if show(pg_admin_host, "work_mem") != "7MB" else "9MB"
    profile = services.create_profile(name="Owner test", settings={
        "zfs": {}, "module": {}, "sysctl": {}, "postgres": {"work_mem": work_mem}})
    plan = services.make_plan(host, version=profile.current)
    applied = drive(services.apply_plan(plan))
    assert applied.status == "succeeded", applied.error
    assert plan.changes.get().status == PlanChange.Status.APPLIED
    assert show(pg_admin_host, "work_mem") == work_mem
    # The log says what was done: the SQL with its value, not the runuser wrapper.
    text = logged(applied)
    assert f"alter system set \"work_mem\" = '{work_mem}';" in text
    assert "could not change directory" not in text and "runuser" not in text

    bench = benchmarks.run_benchmark(host, None, {"clients": 1, "threads": 1, "duration": 3})
    ran = drive(bench.operation, limit=200, pause=0.5)
    assert ran.status == "succeeded", ran.error
    bench.refresh_from_db()
    assert bench.summary["tps"] > 0
    assert f"pgbench -h {pg_admin_host.pg_socket_dir}" in logged(ran)
    assert "setsid" not in logged(ran)


def test_a_refused_value_is_the_first_line_of_the_failure(pg_admin_host, delivered):
    host = register(pg_admin_host)
    assert drive(host.operations.get()).status == "succeeded"
    host.refresh_from_db()  # the discovery pinned its host key
    row = PgCluster.objects.get(host=host)
    cluster = row.target()

    with pytest.raises(CommandFailed) as failed:
        appliers.write_pg(ssh.session(host.ssh_target()), cluster, "work_mem", "lots")
    # PostgreSQL's own words, from psql's ERROR line, then the command and its output.
    first, detail = str(failed.value).split("\n", 1)
    assert first == 'invalid value for parameter "work_mem": "lots"'
    assert "alter system set \"work_mem\" = 'lots'" in detail
    assert "could not change directory" not in detail
