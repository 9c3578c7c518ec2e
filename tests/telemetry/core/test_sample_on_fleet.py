"""The sample command against a real test host (zfs-fuse, sshd, PostgreSQL 15) over real SSH."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from apps.demo.fleet.client import ssh as run_on
from apps.remote import ssh
from apps.remote.gather import discover
from apps.telemetry.core.command import SAMPLE_TIMEOUT, sample_command
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.pgstats import parse_pg_stats, stats_query
from apps.telemetry.core.rates import rates
from apps.telemetry.core.sample import NOT_AVAILABLE
from apps.telemetry.core.spec import spec_from_facts

pytestmark = pytest.mark.fleet


@pytest.fixture
def host(fleet_hosts):
    ssh.close_all()
    yield fleet_hosts[0]
    ssh.close_all()


def _session(host) -> ssh.Session:
    return ssh.session(ssh.Target(name=host.name, address=host.address, port=host.port,
                                  user=host.user,
                                  private_key=Path(host.private_key_path).read_text(),
                                  host_key=host.host_public_key))


def test_one_round_trip_samples_everything_the_host_has_and_pgbench_moves_the_rates(host):
    run = _session(host)
    spec = spec_from_facts(discover(run))
    command = sample_command(spec)

    def take():
        answer = run(command, timeout=SAMPLE_TIMEOUT, check=False)
        assert answer.exit_code == 0, answer.stderr
        return parse_sample(answer.stdout, spec, datetime.now(UTC))

    before = take()
    run_on(host, f"cd / && runuser -u {host.pg_os_user} -- {host.pg_bin_dir}/pgbench "
                 f"-h {host.pg_socket_dir} -p {host.pg_port} -c 2 -j 1 -T 3 {host.pg_database}")
    after = take()

    assert dict(after.missing) == {"dmu_tx": NOT_AVAILABLE,
                                   **{f"txgs:{p}": NOT_AVAILABLE for p in spec.pools}}
    assert after.arc.c_max > 0 and after.memory.total > 0
    assert {p.name for p in after.pools} == set(host.pools)
    assert all(p.health == "ONLINE" and p.checksum_errors == 0 for p in after.pools)
    assert {d.name for d in after.datasets} >= {host.pg_data_dataset, host.pg_wal_dataset}
    [cluster] = after.clusters
    assert cluster.stats.server_version_num // 10000 == 15

    interval = rates(before, after)
    assert interval.reason is None
    pg = interval.clusters[cluster.key]
    assert pg.tps > 0 and pg.wal_bytes_per_second > 0
    assert 0 < pg.cache_hit_ratio <= 1
    assert interval.arc.reads_per_second is not None


def test_the_query_for_servers_before_14_runs_and_reads_wal_from_its_position(host):
    """PostgreSQL 15 runs the pre-14 form too (it only leaves pg_stat_wal out)."""
    run = _session(host)
    [cluster] = spec_from_facts(discover(run)).clusters
    answer = run(cluster.target.psql(stats_query(130000)), timeout=60)
    stats = parse_pg_stats(answer.stdout)
    assert stats.wal_bytes is None and stats.wal_position > 0
    assert stats.checkpoints_timed is not None and stats.xact_commit > 0
