"""Discovery, scrub, send-size and telemetry parsers on output captured from a real
OpenZFS 2.3 host (the VM test host: Debian 13, zfs-kmod 2.3.9, Debian's postgresql-17
in its packaged layout under systemd; tests/remote/fixtures/README.md says how)."""

from __future__ import annotations

import json

import pytest

from apps.alerts.core import scrub
from apps.remote import gather
from apps.remote.facts.host import HostFacts
from apps.remote.facts.sections import split_sections
from apps.replication.core.progress import parse_send_estimate
from apps.tuning.core.advisor import advise
from tests.remote.fakeshell import FakeShell
from tests.remote.fixtures.hosts import FIXTURES, captured_extra, replay_transcript
from tests.telemetry.fixtures import openzfs_samples

CAPTURED = FIXTURES / "openzfs-2.3" / "captured"


def extra(number: int) -> str:
    return captured_extra(CAPTURED, number)


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


def test_direct_io_and_block_cloning_where_openzfs_has_them(facts):
    names = {dataset.name: dataset for dataset in facts.datasets}
    # Read one by one beside sync: the host's own answer to the same property (extra/7.txt).
    assert names["tank/pg/data"].properties["direct"].value == "standard"
    assert "tank/pg/data\tdirect\tstandard\tdefault" in extra(7)
    assert {d.properties["direct"].value for d in facts.datasets} == {"standard"}
    [pool] = facts.pools
    assert pool.block_cloning == "enabled"  # a fresh pool: enabled, not active yet
    assert "tank\tfeature@block_cloning\tenabled\tlocal" in extra(8)


def with_section(name: str, text: str) -> FakeShell:
    """The captured host, with one probe's answer replaced by another real answer."""
    shell = replay_transcript(CAPTURED / "transcript.json")
    for command, (code, stdout, stderr) in list(shell.script.items()):
        sections = split_sections(stdout)
        if name in sections:
            old = sections[name].text
            shell.script[command] = (code, stdout.replace(f"{name}\n{old}", f"{name}\n{text}"),
                                     stderr)
    return shell


def test_direct_always_set_on_the_host_warns_in_the_advisor():
    # zfs set direct=always tank/pg/data, then discovery's own probe (direct-always/).
    always = (CAPTURED / "direct-always" / "zfs_get_direct.txt").read_text()
    facts = gather.discover(with_section("zfs_get_direct", always))
    [finding] = [f for f in advise(facts) if f.id == "direct_io_always"]
    assert finding.subject == "tank/pg/data"
    assert finding.action == "zfs set direct=standard tank/pg/data"
    assert "OpenZFS 2.3.9" in finding.evidence


def test_direct_standard_as_captured_gives_no_warning(facts):
    assert not [f for f in advise(facts) if f.id == "direct_io_always"]


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
    _, sample = openzfs_samples("2.3")
    assert not sample.missing, sample.missing
    assert sample.arc.hits > 0 and sample.arc.size > 0
    assert sample.dmu_tx is not None
    [pool] = sample.pools
    assert pool.name == "tank" and pool.txgs
