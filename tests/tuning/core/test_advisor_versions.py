"""Version-specific advice: PostgreSQL 18 (io_method, checksums on by default) and
OpenZFS 2.3 (the ARC's Linux default, the `direct` property), each only where the
host's versions have it.

PostgreSQL 18 rows are a real 18.4 server's pg_settings (fixtures/pg18); the
OpenZFS 2.3 host is the 2.2 fixture host with its module version edited. The
direct=always rule on a real OpenZFS 2.3 capture (the VM test host) is in
tests/remote/test_openzfs_captured.py.
"""

from __future__ import annotations

from dataclasses import replace

from apps.common.sizes import MiB
from apps.remote.facts.host import HostFacts
from apps.tuning.core.advisor import advise
from tests.tuning.core import hosts
from tests.tuning.core.hosts import GiB, cluster, set_prop, set_setting

DATA = "tank/pg/data"


def only(facts: HostFacts, rule: str) -> list:
    return [f for f in advise(facts) if f.id == rule]


# -- PostgreSQL 18 ------------------------------------------------------------------------

def test_io_method_worker_the_default_is_left_alone():
    facts = hosts.pg18(hosts.openzfs("2.3.2"))
    assert cluster(facts).server_version_num == 180004
    assert not only(facts, "io_method_on_zfs")


def test_io_method_sync_loses_18s_asynchronous_read_ahead():
    facts = hosts.pg18(hosts.openzfs("2.3.2"), "settings_io_method_sync.txt")
    [finding] = only(facts, "io_method_on_zfs")
    assert "io_method=sync, io_workers=3" in finding.evidence
    assert "PostgreSQL 18.4" in finding.evidence and DATA in finding.evidence
    assert "read-ahead" in finding.why and "io_method=worker" in finding.action


def test_io_uring_gains_nothing_on_zfs():
    # The captured build has no liburing (it refuses io_uring: fixtures/pg18), so the
    # value is set on the captured rows here.
    facts = set_setting(hosts.pg18(hosts.openzfs("2.3.2")), "io_method", "io_uring")
    [finding] = only(facts, "io_method_on_zfs")
    assert "FMODE_NOWAIT" in finding.why and finding.severity == "info"


def test_io_method_advice_needs_18_and_zfs():
    facts = hosts.pg18(hosts.openzfs("2.3.2"), "settings_io_method_sync.txt")
    cluster(facts).data_dataset = None
    assert not only(facts, "io_method_on_zfs")  # not on ZFS: not this rule's business
    facts = hosts.pg18(hosts.openzfs("2.3.2"), "settings_io_method_sync.txt")
    cluster(facts).server_version_num = 170004
    assert not only(facts, "io_method_on_zfs")


def test_checksums_on_by_18s_default_are_weighed_on_zfs():
    facts = hosts.pg18(hosts.openzfs("2.3.2"))
    [finding] = only(facts, "data_checksums_pg18_default")
    assert "data_checksums=on" in finding.evidence and "wal_log_hints=off" in finding.evidence
    assert "full-page image" in finding.why and "--no-data-checksums" in finding.why
    assert "pg_checksums --disable" in finding.action
    assert "Disable postgres checksumming" in finding.source and "Campoli" in finding.source
    assert not only(facts, "data_checksums_off")


def test_checksums_before_18_or_off_are_not_18s_default():
    assert not only(hosts.fuse(), "data_checksums_pg18_default")  # a real PG 15, -k
    facts = hosts.openzfs("2.3.2")
    cluster(facts).data_checksums = True  # PostgreSQL 16
    assert not only(facts, "data_checksums_pg18_default")
    facts = hosts.pg18(hosts.openzfs("2.3.2"))
    cluster(facts).data_checksums = False  # initdb --no-data-checksums
    assert not only(facts, "data_checksums_pg18_default")
    assert only(facts, "data_checksums_off")


# -- OpenZFS 2.3 ----------------------------------------------------------------------------

def _automatic_arc(version: str) -> HostFacts:
    """zfs_arc_max=0, c_max as arc_default_max() sizes it for this host's memory."""
    facts = hosts.openzfs(version)
    facts.module_params["zfs_arc_max"] = "0"
    ram = facts.mem_total
    ceiling = max(ram - GiB, ram * 5 // 8) if version >= "2.3" else ram // 2
    facts.arcstats = replace(facts.arcstats, c_max=ceiling)
    return facts


def test_openzfs_23_automatic_arc_leaves_room_advice():
    facts = _automatic_arc("2.3.2")
    [finding] = only(facts, "arc_default_openzfs_23")
    ram = facts.mem_total
    assert "OpenZFS 2.3.2; zfs_arc_max=0" in finding.evidence
    assert "RAM - 1 GiB and 5/8 of RAM" in finding.why and "half of RAM" in finding.why
    rows = {s.name: s for s in cluster(facts).settings}
    assert (rows["shared_buffers"].unit, rows["work_mem"].unit) == ("8kB", "kB")
    buffers = int(rows["shared_buffers"].setting) * 8192
    sorts = int(rows["max_connections"].setting) * int(rows["work_mem"].setting) * 1024
    room = ram - buffers - sorts - max(GiB, ram // 8)  # the OS reserve, as formulas'
    assert room > 0
    assert f"write about {room // MiB * MiB} " in finding.action
    assert "/etc/modprobe.d/zfs.conf" in finding.action


def test_the_arc_default_advice_needs_23_and_automatic_sizing():
    assert not only(_automatic_arc("2.2.4"), "arc_default_openzfs_23")  # half of RAM
    facts = hosts.openzfs("2.3.2")  # zfs_arc_max set explicitly
    assert facts.module_params["zfs_arc_max"] != "0"
    assert not only(facts, "arc_default_openzfs_23")


def test_direct_always_takes_the_arc_from_postgresql():
    facts = set_prop(hosts.openzfs("2.3.2"), DATA, "direct", "always")
    [finding] = only(facts, "direct_io_always")
    assert finding.subject == DATA and finding.action == f"zfs set direct=standard {DATA}"
    assert "buffered I/O" in finding.why and "debug_io_direct" in finding.why
    assert not only(set_prop(hosts.openzfs("2.3.2"), DATA, "direct", "standard"),
                    "direct_io_always")
    assert not only(set_prop(hosts.openzfs("2.2.4"), DATA, "direct", "always"),
                    "direct_io_always")  # no such property before 2.3
