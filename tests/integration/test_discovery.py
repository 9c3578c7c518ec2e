"""Discovery of two real hosts matches what zfs and psql report on each host."""

import pytest

from apps.fleet import services
from apps.ops.models import Operation
from tests.driving import drive
from tests.integration.conftest import register, run_on

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

PROPERTIES = "recordsize,compression,compressratio,atime,logbias,primarycache"


def zfs_truth(fleet_host) -> dict[str, dict[str, str]]:
    out = run_on(fleet_host, f"zfs get -Hp -o name,property,value {PROPERTIES}")
    truth: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        name, prop, value = line.split("\t")
        truth.setdefault(name, {})[prop] = value
    return truth


def psql(fleet_host, sql: str) -> str:
    return run_on(fleet_host, (
        f"runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/psql -X -At "
        f"-h {fleet_host.pg_socket_dir} -p {fleet_host.pg_port} -d postgres -c \"{sql}\"")).strip()


def test_discovery_of_two_hosts_matches_the_hosts(fleet_hosts, delivered):
    hosts = [register(fleet_host) for fleet_host in fleet_hosts]
    for host in hosts:
        operation = drive(host.operations.get())
        assert operation.status == Operation.Status.SUCCEEDED, operation.error

    for host, fleet_host in zip(hosts, fleet_hosts, strict=True):
        host.refresh_from_db()
        assert host.is_pinned and host.reachable and host.host_key_fingerprint == \
            fleet_host.host_key_fingerprint
        assert [pool.name for pool in host.pools.all()] == fleet_host.pools
        pool = host.pools.get()
        assert pool.health == "ONLINE" and pool.size > 0

        truth = zfs_truth(fleet_host)
        recorded = {ds.name: ds for ds in host.datasets.all()}
        assert set(recorded) == set(truth)
        for name, props in truth.items():
            ds = recorded[name]
            assert ds.recordsize == int(props["recordsize"])
            assert ds.compression == props["compression"]
            assert ds.compressratio == pytest.approx(float(props["compressratio"].rstrip("x")))
            assert ds.atime == props["atime"]

        cluster = host.clusters.get()
        assert cluster.port == fleet_host.pg_port
        assert cluster.data_dataset.name == fleet_host.pg_data_dataset
        assert cluster.wal_dataset.name == fleet_host.pg_wal_dataset
        assert cluster.server_version_num == int(psql(fleet_host, "show server_version_num"))
        for name in ("shared_buffers", "full_page_writes", "wal_level", "max_connections"):
            assert cluster.setting(name)["setting"] == psql(
                fleet_host, f"select setting from pg_settings where name = '{name}'")
        assert cluster.setting("shared_buffers")["context"] == "postmaster"
        assert cluster.data_checksums is (psql(fleet_host, "show data_checksums") == "on")
        assert_stats_and_thp_match(host, fleet_host)


def assert_stats_and_thp_match(host, fleet_host) -> None:
    """Standbys, slots and checkpoint counters as psql shows them; THP as sysfs shows it.
    Counters only grow, so the ones read afterwards bound the discovered ones."""
    stats = host.facts["clusters"][0]["stats"]
    assert stats["in_recovery"] is False
    assert stats["standbys"] == int(psql(fleet_host, "select count(*) from pg_stat_replication"))
    slots = psql(fleet_host, "select slot_name from pg_replication_slots order by 1")
    assert [s["name"] for s in stats["slots"]] == slots.split()
    timed, requested = psql(fleet_host, "select checkpoints_timed || ' ' || checkpoints_req"
                                        " from pg_stat_bgwriter").split()
    assert 0 <= stats["checkpoints_timed"] <= int(timed)
    assert 0 <= stats["checkpoints_requested"] <= int(requested)
    for name in ("enabled", "defrag"):
        shown = run_on(fleet_host, f"cat /sys/kernel/mm/transparent_hugepage/{name}")
        assert f"[{host.facts[f'thp_{name}']}]" in shown


def test_discovery_again_updates_the_picture_in_place_and_is_logged(fleet_hosts, delivered):
    host = register(fleet_hosts[0])
    drive(host.operations.get())
    first_ids = set(host.datasets.values_list("id", flat=True))

    operation = drive(services.discover(host))
    assert operation.status == Operation.Status.SUCCEEDED
    assert set(host.datasets.values_list("id", flat=True)) == first_ids
    commands = operation.log_lines.filter(level="command")
    assert commands.exists() and all(line.text.startswith("$ ") for line in commands)


def test_a_zfs_host_whose_postgresql_is_stopped_is_still_a_zfs_host(fleet_hosts, delivered):
    fleet_host = fleet_hosts[1]
    pg_ctl = (f"runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/pg_ctl "
              f"-D {fleet_host.pg_data_dir} -w")
    host = register(fleet_host)
    run_on(fleet_host, f"{pg_ctl} -m fast stop")
    try:
        operation = drive(host.operations.get())
    finally:
        run_on(fleet_host, f"{pg_ctl} -l {fleet_host.pg_log_file} start")
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert not host.clusters.exists()  # never found running: nothing to keep
    assert host.datasets.filter(name=fleet_host.pg_data_dataset).exists()
