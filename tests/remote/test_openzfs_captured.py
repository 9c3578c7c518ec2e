"""Discovery, scrub, send-size and telemetry parsers on output captured from a real
OpenZFS 2.3 host (the VM test host: Debian 13, zfs-kmod 2.3.9, Debian's postgresql-17
in its packaged layout under systemd; tests/remote/fixtures/README.md says how)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from apps.alerts.core import scrub
from apps.remote import gather
from apps.remote.facts.host import HostFacts
from apps.replication.core.progress import parse_send_estimate
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.spec import spec_from_facts
from tests.remote.fixtures.hosts import FIXTURES, replay_transcript

CAPTURED = FIXTURES / "openzfs-2.3" / "captured"
TELEMETRY = FIXTURES.parent.parent / "telemetry" / "fixtures" / "openzfs-2.3"


def extra(number: int) -> str:
    """The output of extra command `number` (its first two lines are the command and
    its exit code)."""
    return (CAPTURED / "extra" / f"{number}.txt").read_text().split("\n", 2)[2]


@pytest.fixture(scope="module")
def facts() -> HostFacts:
    return gather.discover(replay_transcript(CAPTURED / "transcript.json"))


def test_the_captured_facts_read_back_as_discovery_makes_them_now(facts):
    stored = HostFacts.from_dict(json.loads((CAPTURED / "facts.json").read_text()))
    assert stored == facts


def test_the_kernel_module_its_version_and_its_parameters(facts):
    assert (facts.zfs.dialect, facts.zfs.version) == ("openzfs", "2.3.9-0+deb13u1")
    assert facts.zfs.kernel_version == facts.zfs.userland_version
    caps = facts.zfs.capabilities
    assert caps.module_params and caps.resumable_send and caps.multi_snapshot
    assert {"lz4", "zstd"} <= set(caps.compression)
    params = dict(line.rsplit("/", 1)[1].split(":", 1) for line in extra(10).split())
    # Parameters are kept as the host prints them (0: the ARC sizes itself).
    assert facts.module_params["zfs_arc_max"] == params["zfs_arc_max"] == "0"
    assert facts.module_params["zfs_txg_timeout"] == params["zfs_txg_timeout"]
    assert facts.arcstats.c_max > facts.arcstats.c_min > 0


def test_the_pool_and_datasets(facts):
    [pool] = facts.pools
    assert (pool.name, pool.health) == ("tank", "ONLINE")
    names = {dataset.name: dataset for dataset in facts.datasets}
    assert {"tank/pg/data", "tank/pg/wal"} <= set(names)
    data = names["tank/pg/data"].properties
    assert data["recordsize"].value == "16384" and data["compression"].value == "lz4"
    assert names["tank/pg/data"].exact_sizes


def test_the_packaged_cluster_under_systemd(facts):
    [cluster] = facts.clusters
    assert (cluster.version, cluster.server_version_num) == ("17", 170012)
    assert (cluster.packaged, cluster.systemd_unit) == ("17/main", "postgresql@17-main.service")
    assert cluster.config_file == "/etc/postgresql/17/main/postgresql.conf"
    assert cluster.data_dir == "/var/lib/postgresql/17/main"
    assert (cluster.data_dataset, cluster.wal_dataset) == ("tank/pg/data", "tank/pg/wal")
    assert "postgresql@17-main.service" in extra(9)


def test_a_scrub_in_progress_and_finished():
    running, finished = scrub.read(extra(15)), scrub.read(extra(16))
    assert running.state == "in progress" and 0 < running.percent < 100
    assert (finished.state, finished.errors) == ("finished", 0)
    assert finished.ended is not None


def test_zfs_send_estimates_plain_and_compressed():
    plain, compressed = parse_send_estimate(extra(6)), parse_send_estimate(extra(5))
    assert plain == 67479344 and compressed == 22537520  # -c: as stored, lz4


def test_a_telemetry_sample_reads_arc_txgs_and_dmu_tx():
    facts = HostFacts.from_dict(json.loads((TELEMETRY / "facts.json").read_text()))
    meta = json.loads((TELEMETRY / "meta.json").read_text())["samples"][1]
    sample = parse_sample((TELEMETRY / "sample-2.txt").read_text(), spec_from_facts(facts),
                          datetime.fromisoformat(meta["taken_at"]).astimezone(UTC))
    assert not sample.missing, sample.missing
    assert sample.arc.hits > 0 and sample.arc.size > 0
    assert sample.dmu_tx is not None
    [pool] = sample.pools
    assert pool.name == "tank" and pool.txgs
