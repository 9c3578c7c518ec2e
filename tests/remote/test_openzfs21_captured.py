"""Discovery, advice, holds, send sizes, scrubs and telemetry on output captured from a
real OpenZFS 2.1 host (the VM test host built from Debian 12: zfs-kmod 2.1.11 by DKMS,
Debian's postgresql-15 in its packaged layout under systemd; tests/remote/fixtures/README.md
says how). What 2.1 lacks (Direct I/O, block cloning) must read as absent, not as an error."""

from __future__ import annotations

import json

import pytest

from apps.alerts.core import scrub
from apps.remote import gather
from apps.remote.facts.host import HostFacts
from apps.remote.facts.snapshots import parse_holds
from apps.replication.core.progress import parse_send_estimate
from apps.tuning.core.advisor import advise
from tests.remote.fixtures.hosts import FIXTURES, captured_extra, replay_transcript
from tests.telemetry.fixtures import openzfs_samples

CAPTURED = FIXTURES / "openzfs-2.1" / "captured"


def extra(number: int) -> str:
    return captured_extra(CAPTURED, number)


@pytest.fixture(scope="module")
def facts() -> HostFacts:
    return gather.discover(replay_transcript(CAPTURED / "transcript.json"))


def test_the_captured_facts_read_back_as_discovery_makes_them_now(facts):
    stored = HostFacts.from_dict(json.loads((CAPTURED / "facts.json").read_text()))
    assert stored == facts


def test_the_kernel_module_its_version_and_its_parameters(facts):
    assert (facts.zfs.dialect, facts.zfs.version) == ("openzfs", "2.1.11-1+deb12u1")
    assert extra(1).split() == ["zfs-2.1.11-1+deb12u1", "zfs-kmod-2.1.11-1+deb12u1"]
    caps = facts.zfs.capabilities
    assert caps.module_params and caps.resumable_send and caps.multi_snapshot
    assert {"lz4", "zstd"} <= set(caps.compression)
    params = dict(line.rsplit("/", 1)[1].split(":", 1) for line in extra(10).split())
    assert facts.module_params["zfs_arc_max"] == params["zfs_arc_max"] == "0"
    assert facts.module_params["zfs_txg_timeout"] == params["zfs_txg_timeout"] == "5"
    # 2.1 sizes an automatic ARC at half of RAM at most, where 2.3 takes nearly all of it.
    assert facts.arcstats.c_max <= facts.mem_total // 2 + 64 * 2**20


def test_what_21_lacks_reads_as_absent(facts):
    # zfs refuses the whole `get` for an unknown property (exit 2, extra/7), so discovery
    # asks for `direct` alone; zpool leaves an unknown feature out of its answer (extra/8).
    assert "invalid property 'direct'" in extra(7)
    assert {"direct" in d.properties for d in facts.datasets} == {False}
    assert "feature@lz4_compress\tactive" in extra(8)
    assert "block_cloning" not in extra(8)
    [pool] = facts.pools
    assert (pool.name, pool.health, pool.block_cloning) == ("tank", "ONLINE", None)
    names = {dataset.name: dataset for dataset in facts.datasets}
    data = names["tank/pg/data"].properties
    assert data["recordsize"].value == "16384" and data["compression"].value == "lz4"
    assert data["sync"].value == "standard"


def test_the_packaged_postgresql_15_cluster_under_systemd(facts):
    [cluster] = facts.clusters
    assert (cluster.version, cluster.server_version_num) == ("15", 150018)
    assert (cluster.packaged, cluster.systemd_unit) == ("15/main", "postgresql@15-main.service")
    assert cluster.config_file == "/etc/postgresql/15/main/postgresql.conf"
    assert (cluster.data_dataset, cluster.wal_dataset) == ("tank/pg/data", "tank/pg/wal")
    assert "postgresql@15-main.service" in extra(9)
    assert "start.conf" in extra(13) and extra(13).rstrip().endswith("auto")


def test_the_advisor_names_the_21_corruption_window_and_not_23s_arc_default(facts):
    found = {finding.id: finding for finding in advise(facts)}
    # 2.1.11 is inside openzfs/zfs#15526's window (fixed in 2.1.15), the workaround unset.
    bug = found["zfs_corruption_bug"]
    assert bug.severity == "critical" and "2.1.11" in bug.title
    assert "zfs_dmu_offset_next_sync=1" in bug.evidence
    assert "arc_default_openzfs_23" not in found and "direct_io_always" not in found


def test_holds_send_estimates_and_a_scrub():
    assert parse_holds(extra(3)) == {"tank/pg/data@captured": ("keep",)}
    plain, compressed = parse_send_estimate(extra(6)), parse_send_estimate(extra(5))
    assert plain == 41402336 and compressed == 14820832  # -c: as stored, lz4
    running, finished = scrub.read(extra(15)), scrub.read(extra(16))
    assert running.state == "in progress" and 0 < running.percent < 100
    assert (finished.state, finished.errors) == ("finished", 0) and finished.ended


def test_a_telemetry_sample_reads_arc_txgs_and_dmu_tx():
    _, sample = openzfs_samples("2.1")
    assert not sample.missing, sample.missing
    assert sample.arc.hits > 0 and sample.arc.size > 0
    assert sample.dmu_tx is not None
    [pool] = sample.pools
    assert pool.name == "tank" and pool.txgs
