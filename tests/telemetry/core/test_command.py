"""The sample command: built from discovered facts, every value quoted, absent sources marked."""

from __future__ import annotations

import dataclasses
import shlex
import subprocess

import pytest

from apps.remote.facts.sections import split_sections
from apps.remote.facts.zfs import OPENZFS, ZfsVersion, baseline_capabilities
from apps.telemetry.core.command import ABSENT, sample_command, sample_probes
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.sample import NOT_AVAILABLE
from apps.telemetry.core.spec import SampleSpec, spec_from_facts
from tests.remote.test_commands import HOSTILE
from tests.telemetry.core.helpers import T0, fuse_facts, fuse_spec, openzfs_spec


def test_spec_from_the_captured_zfs_fuse_facts_asks_only_what_zfs_fuse_answers():
    spec = fuse_spec()
    assert spec.pools == ("tank",)
    assert (spec.zpool_parsable, spec.zpool_fragmentation, spec.logicalused,
            spec.zfs_get_types) == (False, False, False, False)
    [cluster] = spec.clusters
    assert cluster.server_version_num == 150020
    assert cluster.target.owner == "postgres"
    assert cluster.key.endswith("/pgdata")


def test_zfs_fuse_command_forms():
    probes = {name: probe.text for name, probe in sample_probes(fuse_spec()).items()}
    assert "zpool list -H -o name,size,allocated,free,capacity,health tank" in probes["zpool_list"]
    assert ("zfs get -Hp -r -o name,property,value,source "
            "used,usedbysnapshots,compressratio tank") in probes["zfs_get"]
    assert "/proc/spl/kstat/zfs/tank/txgs" in probes["txgs:tank"]
    assert "then zpool status tank;" in probes["zpool_status"]


def test_openzfs_command_forms():
    probes = {name: probe.text for name, probe in sample_probes(openzfs_spec()).items()}
    assert ("zpool list -Hp -o name,size,allocated,free,fragmentation,capacity,health tank"
            in probes["zpool_list"])
    assert ("zfs get -Hp -r -t filesystem,volume -o name,property,value,source "
            "used,usedbysnapshots,compressratio,logicalused tank") in probes["zfs_get"]
    assert "then zpool status -p tank;" in probes["zpool_status"]
    assert "pg_stat_wal" in probes["pg:0"] and "pg_stat_bgwriter" in probes["pg:0"]


def test_one_command_one_round_trip_and_the_log_names_the_sources():
    command = sample_command(fuse_spec())
    assert command.shown == ("telemetry sample: uptime, meminfo, loadavg, arc, dmu_tx, "
                             "zpool_list, zpool_status, zfs_get, txgs:tank, pg:0")
    shlex.split(command.text)  # one well-formed shell line


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_pool_name_from_facts_is_left_out_with_the_reason(name):
    facts = fuse_facts()
    facts.pools = [*facts.pools, dataclasses.replace(facts.pools[0], name=name)]
    spec = spec_from_facts(facts)
    assert spec.pools == ("tank",)
    assert any(repr(name) in reason for reason in spec.skipped)
    assert set(sample_probes(spec)) >= {"txgs:tank"} and f"txgs:{name}" not in sample_probes(spec)


@pytest.mark.parametrize("field", ["owner", "bin_dir", "socket_dir"])
@pytest.mark.parametrize("value", [*HOSTILE, None])
def test_a_cluster_with_a_hostile_or_unknown_value_is_not_sampled(field, value):
    facts = fuse_facts()
    setattr(facts.clusters[0], field, value)
    spec = spec_from_facts(facts)
    assert spec.clusters == ()
    assert len(spec.skipped) == 1 and facts.clusters[0].data_dir in spec.skipped[0]


def test_a_cluster_whose_version_is_unknown_or_too_old_is_not_sampled():
    facts = fuse_facts()
    facts.clusters[0].server_version_num = None
    assert spec_from_facts(facts).clusters == ()
    facts.clusters[0].server_version_num = 90624
    spec = spec_from_facts(facts)
    assert spec.clusters == () and "older than 10" in spec.skipped[0]


def test_a_host_without_zfs_samples_the_kernel_only():
    facts = fuse_facts()
    facts.zfs, facts.pools = None, []
    spec = spec_from_facts(facts)
    assert not spec.zfs and spec.pools == ()
    assert set(sample_probes(spec)) == {"uptime", "meminfo", "loadavg", "arc", "dmu_tx", "pg:0"}


def test_the_script_runs_in_a_real_shell_and_absent_sources_print_the_marker():
    """This machine has /proc but no ZFS: the ZFS kstats come back as ABSENT."""
    spec = SampleSpec(zfs=False, zpool_parsable=False, zpool_status_parsable=False,
                      zpool_fragmentation=False,
                      logicalused=False, zfs_get_types=False)
    done = subprocess.run(["sh", "-c", sample_command(spec).text], capture_output=True,
                          text=True, timeout=30, check=True)
    sections = split_sections(done.stdout)
    assert sections["arc"].text == ABSENT + "\n" and sections["arc"].ok
    assert sections["dmu_tx"].text == ABSENT + "\n"
    assert "MemTotal:" in sections["meminfo"].text
    sample = parse_sample(done.stdout, spec, T0)
    assert sample.arc is None and sample.missing["arc"] == NOT_AVAILABLE
    assert sample.memory is not None and sample.memory.total > 0
    assert sample.uptime is not None and sample.uptime > 0
    assert sample.load is not None


def test_openzfs_0_7_gets_zpool_list_p_but_not_zpool_status_p():
    facts = fuse_facts()
    caps = dataclasses.replace(baseline_capabilities(OPENZFS, ZfsVersion(None, None)),
                               version_command=False)  # no `zfs version` before 0.8
    facts.zfs = dataclasses.replace(facts.zfs, dialect=OPENZFS, capabilities=caps)
    probes = {name: probe.text for name, probe in sample_probes(spec_from_facts(facts)).items()}
    assert "zpool list -Hp -o" in probes["zpool_list"]
    assert "then zpool status tank;" in probes["zpool_status"]
    assert "logicalused" in probes["zfs_get"] and "-t filesystem,volume" in probes["zfs_get"]
