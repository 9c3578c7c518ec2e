"""Each advisor rule fires on facts that show the problem and stays quiet otherwise.

Facts come from the fixture hosts (the real zfs-fuse capture, the OpenZFS 2.2
host and its 2.1/2.3 variants), edited per test to show one thing.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from apps.remote import snapshot_plan
from apps.remote.facts import postgres
from apps.remote.facts.host import HostFacts
from apps.tuning.core import advisor, sources
from apps.tuning.core.advisor import advise
from apps.tuning.core.profiles import builtin
from tests.remote.fixtures.hosts import fuse_extra
from tests.tuning.core import hosts
from tests.tuning.core.hosts import GiB, cluster, set_prop, set_setting

DATA, WAL = "tank/pg/data", "tank/pg/wal"


def ids(facts: HostFacts, acknowledged: frozenset[str] = frozenset()) -> set[str]:
    return {f.id for f in advise(facts, acknowledged=acknowledged)}


def only(facts: HostFacts, rule: str, acknowledged: frozenset[str] = frozenset()) -> list:
    return [f for f in advise(facts, acknowledged=acknowledged) if f.id == rule]


def test_every_rule_is_registered_once_and_every_finding_cites_a_source():
    assert len(set(advisor.rule_ids())) == len(advisor.rule_ids()) == 48
    facts = hosts.openzfs("2.2.0")
    set_prop(facts, DATA, "sync", "disabled")
    known = {v for k, v in vars(sources).items() if k.isupper()}
    for finding in advise(facts):
        assert finding.severity in ("critical", "warning", "info")
        assert all(part.strip() in known for part in finding.source.split(";"))
        assert finding.evidence and finding.why and finding.action


def test_full_page_writes_off_where_the_data_is_not_on_zfs():
    facts = hosts.openzfs()  # full_page_writes=off on ZFS: fine
    assert "full_page_writes_off_not_zfs" not in ids(facts)
    cluster(facts).data_dataset = None
    [finding] = only(facts, "full_page_writes_off_not_zfs")
    assert finding.severity == "critical" and "not on a ZFS dataset" in finding.evidence
    facts = set_prop(hosts.openzfs(), DATA, "recordsize", "4096")
    assert only(facts, "full_page_writes_off_not_zfs")  # splits pages: not safe either


def test_volatile_write_cache_is_about_power_loss_protection_not_the_sync_method():
    facts = hosts.openzfs()
    [finding] = only(facts, "volatile_write_cache_sync_method")
    assert "nvme0n1" in finding.evidence and "sda" in finding.evidence
    assert "nvme1n1" not in finding.evidence  # its controller says the cache is off
    assert "power-loss protection" in finding.title and "power-loss" in finding.action
    assert "nvme set-feature -f 6 -v 0 /dev/nvme0n1" in finding.action
    assert "fdatasync as for fsync" in finding.why and "txg sync" in finding.why
    assert "wal_sync_method=fsync" not in finding.action  # no remedy: fsync flushes the same
    assert only(set_setting(facts, "wal_sync_method", "fsync"),
                "volatile_write_cache_sync_method")
    facts = hosts.fuse()  # one rotating virtio disk: nothing volatile to worry about
    assert "volatile_write_cache_sync_method" not in ids(facts)


def test_bounded_loss_needs_acknowledgement():
    facts = hosts.openzfs()
    assert "bounded_loss_unacknowledged" not in ids(facts)
    set_prop(facts, WAL, "sync", "disabled")
    set_setting(facts, "synchronous_commit", "off")
    found = only(facts, "bounded_loss_unacknowledged")
    assert {f.subject for f in found} == {WAL, cluster(facts).data_dir}
    assert all(f.severity == "critical" for f in found)
    assert not only(facts, "bounded_loss_unacknowledged", frozenset({"bounded_loss"}))


def test_txg_timeout_below_five():
    facts = hosts.openzfs()
    assert "txg_timeout_low" not in ids(facts)
    facts.module_params["zfs_txg_timeout"] = "1"
    assert only(facts, "txg_timeout_low")[0].severity == "warning"
    assert only(facts, "txg_timeout_low", frozenset({"bounded_loss"}))[0].severity == "info"
    assert "txg_timeout_low" not in ids(hosts.fuse())  # no module parameters at all


def test_logbias_throughput_without_a_log_device():
    facts = hosts.fuse()  # tank/pg/wal has logbias=throughput; pool tank has no log
    [finding] = only(facts, "logbias_throughput_no_slog")
    assert finding.subject == WAL
    facts = hosts.openzfs()  # throughput on data, but pool tank has a SLOG
    assert "logbias_throughput_no_slog" not in ids(facts)
    facts.pools[0].has_log = False
    assert only(facts, "logbias_throughput_no_slog")[0].subject == DATA


def test_dedup():
    facts = hosts.openzfs()
    assert "dedup_on" not in ids(facts)
    set_prop(facts, "tank", "dedup", "on")
    assert [f.subject for f in only(facts, "dedup_on")] == ["tank"]


def test_compression_and_atime_on_pg_datasets():
    facts = hosts.fuse()
    assert not {"compression_off", "atime_on"} & ids(facts)  # "fast" and "tank" hold no PG
    set_prop(facts, DATA, "compression", "off")
    set_prop(facts, WAL, "atime", "on")
    assert [f.subject for f in only(facts, "compression_off")] == [DATA]
    assert [f.subject for f in only(facts, "atime_on")] == [WAL]


def test_recordsize_small_and_large():
    facts = hosts.fuse()  # 8K: neither
    assert not {"recordsize_below_8k", "recordsize_large_for_oltp"} & ids(facts)
    set_prop(facts, WAL, "recordsize", "4096")
    [small] = only(facts, "recordsize_below_8k")
    assert small.subject == WAL and "predates lz4" in small.why
    set_prop(facts, DATA, "recordsize", str(1024 * 1024))
    [large] = only(facts, "recordsize_large_for_oltp")
    assert large.severity == "info" and "+20%" in large.why and "7.6x" in large.why
    assert "recordsize=32K on both the data and the WAL" in large.why
    assert '"64K also work well, as does the 128K default"' in large.why
    assert sources.OPENZFS_WORKLOAD_POSTGRES_RECORDSIZE in large.source


@pytest.mark.parametrize("size", ["32768", "65536", "131072"])
def test_upstreams_32k_to_128k_is_not_a_problem_on_oltp_data(size):
    facts = set_prop(hosts.fuse(), DATA, "recordsize", size)
    assert "recordsize_large_for_oltp" not in ids(facts)


def test_sources_quote_upstream_recordsize_for_data_and_wal_alike():
    quote = sources.OPENZFS_WORKLOAD_POSTGRES_RECORDSIZE
    assert "32K on both the data and the WAL" in quote and "predates lz4" in quote
    cited = " ".join(builtin("oltp-safe").citations)
    assert "for WAL" not in cited and quote in cited and "+20%" in cited


def test_large_records_are_not_flagged_when_the_profile_asks_for_them():
    facts = hosts.fuse()
    assert "recordsize_large_for_oltp" not in {
        f.id for f in advise(facts, builtin("analytics").settings)}
    introduced = {f.id: f.stage for f in advise(set_prop(facts, DATA, "recordsize", "1M"),
                                                builtin("oltp-safe").settings)}
    assert introduced["recordsize_large_for_oltp"] == "resolved"


def test_primarycache_metadata_or_none_on_a_pg_dataset():
    facts = hosts.openzfs()
    assert "primarycache_not_all" not in ids(facts)
    set_prop(facts, DATA, "primarycache", "metadata")
    set_prop(facts, WAL, "primarycache", "none")
    found = only(facts, "primarycache_not_all")
    assert {f.subject for f in found} == {DATA, WAL}
    assert all(f.severity == "warning" and "withdrawn" in f.why for f in found)


def test_primarycache_metadata_in_a_profile_is_introduced():
    profile = builtin("oltp-safe").settings
    zfs = {role: {**props, "primarycache": "metadata"} for role, props in profile.zfs.items()}
    staged = {(f.id, f.subject): f.stage
              for f in advise(hosts.openzfs(), replace(profile, zfs=zfs))}
    assert staged[("primarycache_not_all", DATA)] == "introduced"
    assert ("primarycache_not_all", DATA) not in {
        (f.id, f.subject) for f in advise(hosts.openzfs(), profile)}


def test_data_and_wal_placement():
    facts = hosts.openzfs()  # separate datasets, one pool, atomic multi-snapshots
    assert not {"data_wal_same_dataset", "data_wal_different_pools"} & ids(facts)
    cluster(facts).wal_dataset = DATA
    assert only(facts, "data_wal_same_dataset")
    cluster(facts).wal_dataset = "fast/wal"
    assert "one pool" in only(facts, "data_wal_different_pools")[0].why


def test_the_advisor_warns_of_snapshots_exactly_where_the_engine_cannot_take_one():
    """The real zfs-fuse capture (the demo layout): zfs-fuse takes one name per command,
    but data and WAL sit alone under tank/pg, so the engine's `zfs snapshot -r tank/pg`
    is atomic and the advisor must not say otherwise."""
    fuse = hosts.fuse()
    names = [d.name for d in fuse.datasets]
    chosen = snapshot_plan.for_cluster(DATA, WAL, names, multi_snapshot=False)
    assert chosen.method == snapshot_plan.RECURSIVE
    assert not only(fuse, "data_wal_different_pools")
    # Another dataset under tank/pg rules -r out: the engine falls back to
    # pg_backup_start/stop around two snapshots, and the advisor says so, with its reason.
    fuse.datasets.append(replace(fuse.datasets[-1], name="tank/pg/other"))
    [finding] = only(fuse, "data_wal_different_pools")
    assert "tank/pg/other" in finding.why and "pg_backup_start" in finding.why


def test_arc_plus_shared_buffers():
    facts = hosts.openzfs()  # ARC 32GB + shared_buffers 16GB of 62.8GB: 14.8GB left
    assert "arc_plus_shared_buffers" not in ids(facts)
    facts.module_params["zfs_arc_max"] = str(44 * GiB)
    assert only(facts, "arc_plus_shared_buffers")[0].severity == "warning"
    facts.module_params["zfs_arc_max"] = str(50 * GiB)
    assert only(facts, "arc_plus_shared_buffers")[0].severity == "critical"
    facts.module_params["zfs_arc_max"] = "0"  # auto: arcstats c_max counts (32GB)
    assert "arc_plus_shared_buffers" not in ids(facts)


def test_shared_buffers_above_40_percent():
    facts = hosts.openzfs()
    assert "shared_buffers_over_40pct" not in ids(facts)
    set_setting(facts, "shared_buffers", str(30 * GiB // 8192))
    assert only(facts, "shared_buffers_over_40pct")


def test_dirty_limit_and_background():
    facts = hosts.openzfs()  # dirty_ratio 20 of 62.8GB = 12.6GB on NVMe: > 10 s
    [finding] = only(facts, "dirty_limit_large")
    assert "nvme" in finding.evidence
    assert "dirty_background_missing" not in ids(facts)
    facts.sysctls.update({"vm.dirty_bytes": GiB, "vm.dirty_ratio": 0,
                             "vm.dirty_background_bytes": 0, "vm.dirty_background_ratio": 0})
    assert "dirty_limit_large" not in ids(facts)
    assert only(facts, "dirty_background_missing")
    facts.sysctls["vm.dirty_bytes"] = 40 * GiB
    [finding] = only(facts, "dirty_limit_large")
    assert finding.evidence.startswith("vm.dirty_bytes=42949672960 (40.0 GiB);")  # a size to read
    facts.sysctls["vm.dirty_bytes"] = GiB
    facts.sysctls["vm.dirty_background_bytes"] = GiB // 4
    assert "dirty_background_missing" not in ids(facts)


@pytest.mark.parametrize(("version_num", "severity", "says"), [
    (120010, "warning", "runs after every such COPY"),
    (160004, "info", "does not cover 13+"),
])
def test_wal_level_minimal_with_large_shared_buffers(version_num, severity, says):
    facts = hosts.openzfs()
    assert "wal_level_minimal_copy" not in ids(facts)  # replica
    set_setting(facts, "wal_level", "minimal")
    cluster(facts).server_version_num = version_num
    [finding] = only(facts, "wal_level_minimal_copy")
    assert finding.severity == severity and says in finding.why
    set_setting(facts, "shared_buffers", str(GiB // 8192))
    assert "wal_level_minimal_copy" not in ids(facts)


@pytest.mark.parametrize(("version", "fires"), [
    ("2.1.3", False), ("2.1.4", True), ("2.1.13", True), ("2.1.14", True), ("2.1.15", False),
    ("2.2.0", True), ("2.2.1", True), ("2.2.2", True), ("2.2.3", True), ("2.2.4", False),
    ("2.3.0", False),
])
def test_openzfs_corruption_window(version, fires):
    facts = hosts.openzfs(version)
    assert ("zfs_corruption_bug" in ids(facts)) is fires
    if fires:  # the window is the one the message names
        [finding] = only(facts, "zfs_corruption_bug")
        assert "2.1.15 and 2.2.4" in finding.why and "2.1.15 or later" in finding.action


def test_corruption_workaround_lowers_the_severity():
    facts = hosts.openzfs("2.1.5")
    assert only(facts, "zfs_corruption_bug")[0].severity == "critical"
    facts.module_params["zfs_dmu_offset_next_sync"] = "0"
    [finding] = only(facts, "zfs_corruption_bug")
    assert finding.severity == "warning" and "zfs_dmu_offset_next_sync" not in finding.action
    assert "zfs_corruption_bug" not in ids(hosts.fuse())  # no version to judge


def test_block_cloning_on_affected_versions():
    facts = hosts.openzfs("2.2.3")
    assert "bclone_enabled_affected" not in ids(facts)  # 2.2.x default 0
    facts.module_params["zfs_bclone_enabled"] = "1"
    [finding] = only(facts, "bclone_enabled_affected")
    assert finding.severity == "critical" and "not disabled on tank" in finding.evidence
    assert "bclone_enabled_affected" not in ids(hosts.openzfs("2.3.0"))  # default 1, fixed
    facts.pools[0].block_cloning = "disabled"  # the pool cannot clone: nothing to fear
    assert "bclone_enabled_affected" not in ids(facts)
    facts.pools[0].block_cloning = None  # unread: it may
    assert "bclone_enabled_affected" in ids(facts)


def test_slog_needs_power_loss_protection():
    assert [f.subject for f in only(hosts.openzfs(), "slog_power_loss")] == ["tank"]
    facts = hosts.openzfs()
    facts.pools[0].has_log = False
    assert "slog_power_loss" not in ids(facts)


def test_data_checksums_off_is_information():
    [finding] = only(hosts.openzfs(), "data_checksums_off")
    assert finding.severity == "info" and "pg_checksums" in finding.action
    assert "data_checksums_off" not in ids(hosts.fuse())  # captured with initdb -k


def test_desired_settings_stage_findings():
    facts = hosts.openzfs()
    staged = {f.id: f.stage for f in advise(facts, builtin("oltp-bounded-loss").settings)}
    assert staged["bounded_loss_unacknowledged"] == "introduced"
    assert staged["txg_timeout_low"] == "introduced"
    assert staged["dirty_limit_large"] == "resolved"
    assert staged["slog_power_loss"] == "current"
    acknowledged = advise(facts, builtin("oltp-bounded-loss").settings,
                          frozenset({"bounded_loss"}))
    assert "bounded_loss_unacknowledged" not in {f.id for f in acknowledged}


def test_zfs_fuse_with_large_shared_buffers():
    facts = hosts.fuse()
    set_setting(facts, "shared_buffers", str(128 * 1024 * 1024 // 8192))
    assert "zfs_fuse_large_shared_buffers" not in ids(facts)
    set_setting(facts, "shared_buffers", str(256 * 1024 * 1024 // 8192))
    assert only(facts, "zfs_fuse_large_shared_buffers")[0].severity == "warning"
    facts = hosts.openzfs()  # 16GB of shared_buffers on OpenZFS is no such case
    assert "zfs_fuse_large_shared_buffers" not in ids(facts)


def test_the_safe_profile_on_zfs_fuse_is_warned_about():
    found = {f.id: f for f in advise(hosts.fuse(), builtin("oltp-safe").settings)}
    assert found["zfs_fuse_large_shared_buffers"].stage == "introduced"


# -- issue 12: lessons of the references not covered before ---------------------------------

def test_database_at_the_pool_root():
    facts = hosts.openzfs()
    assert "database_at_pool_root" not in ids(facts)
    cluster(facts).data_dataset = "tank"
    [finding] = only(facts, "database_at_pool_root")
    assert finding.subject == cluster(facts).data_dir and "zfs create tank/pg/data" in \
        finding.action


def test_ashift_below_12_on_solid_state():
    facts = hosts.openzfs()  # ashift 12 on NVMe
    assert "ashift_below_12" not in ids(facts)
    facts.pools[0].ashift = 9
    [finding] = only(facts, "ashift_below_12")
    assert "512-byte" in finding.evidence and "nvme" in finding.evidence
    for disk in facts.disks:
        disk.rotational = True
    assert "ashift_below_12" not in ids(facts)  # hard disks may really be 512-byte


def test_pool_without_redundancy():
    assert "pool_no_redundancy" not in ids(hosts.openzfs())  # a mirror
    [finding] = only(hosts.fuse(), "pool_no_redundancy")  # tank is one file vdev
    assert finding.subject == "tank" and "disk.img" in finding.evidence


def test_scrub_overdue_after_35_days():
    facts = hosts.openzfs()  # last scrub ended 2024-09-08
    [finding] = only(facts, "scrub_overdue")
    assert "2024-09-08" in finding.evidence and "zpool scrub tank" in finding.action
    facts.pools[0].last_scrub = (datetime.now() - timedelta(days=34)).isoformat()
    assert "scrub_overdue" not in ids(facts)
    facts.pools[0].last_scrub = None  # never scrubbed
    assert "not shown" in only(facts, "scrub_overdue")[0].evidence


def test_slog_suggested_on_hard_disks_and_mirrored():
    facts = hosts.openzfs()  # NVMe: no SLOG needed; its SLOG is one device
    assert "slog_suggested_hdd" not in ids(facts)
    [single] = only(facts, "slog_not_mirrored")
    assert "nvme-INTEL" in single.evidence
    facts.pools[0].logs[0].kind = "mirror"
    assert "slog_not_mirrored" not in ids(facts)
    facts = hosts.fuse()  # a rotating disk, pool tank without log
    assert [f.subject for f in only(facts, "slog_suggested_hdd")] == ["tank"]


def test_l2arc_is_information_on_pools_that_have_one():
    [finding] = only(hosts.openzfs(), "l2arc_considerations")
    assert "sda" in finding.evidence and "hybrid" in finding.action
    assert "l2arc_considerations" not in ids(hosts.fuse())


def test_prefetch_disabled_states_its_trade_off():
    facts = hosts.openzfs()
    assert "prefetch_disabled" not in ids(facts)
    facts.module_params["zfs_prefetch_disable"] = "1"
    assert "sequential" in only(facts, "prefetch_disabled")[0].why


def test_txg_timeout_of_one_is_only_for_nvme():
    facts = hosts.openzfs()
    facts.module_params["zfs_txg_timeout"] = "1"
    bounded = frozenset({"bounded_loss"})
    assert only(facts, "txg_timeout_low", bounded)[0].severity == "info"  # NVMe
    for disk in facts.disks:
        disk.transport = "sata"
    [finding] = only(facts, "txg_timeout_low", bounded)
    assert finding.severity == "warning" and "ssd storage" in finding.evidence


def test_zfs_dirty_data_is_read_from_its_module_parameter():
    facts = hosts.openzfs()  # zfs_dirty_data_max 4GB on local NVMe: 4 s, fine
    assert "zfs_dirty_data_large" not in ids(facts)
    for disk in facts.disks:
        disk.model = "Amazon Elastic Block Store" if disk.model else None
    [finding] = only(facts, "zfs_dirty_data_large")  # 4GB at 125MB/s: 32 s
    assert "zfs_dirty_data_max=4294967296" in finding.evidence and "cloud" in finding.evidence
    del facts.module_params["zfs_dirty_data_max"]
    facts.module_params["zfs_dirty_data_max_percent"] = "10"
    assert "zfs_dirty_data_max_percent=10" in only(facts, "zfs_dirty_data_large")[0].evidence
    assert "zfs_dirty_data_large" not in ids(hosts.fuse())  # no module parameters


def test_cloud_volumes_seen_as_nvme_drain_slowly():
    facts = hosts.openzfs()
    facts.sysctls.update({"vm.dirty_bytes": 2 * GiB, "vm.dirty_ratio": 0})
    assert "dirty_limit_large" not in ids(facts)  # 2GB on local NVMe: 2 s
    for disk in facts.disks:
        disk.model = "Google PersistentDisk" if disk.model else None
    [finding] = only(facts, "dirty_limit_large")
    assert "cloud storage drains about" in finding.evidence and "16 s" in finding.evidence


def test_memory_budget_overcommitted():
    facts = hosts.openzfs()  # 16GB buffers + 32GB ARC + 200 x 64MB + 7.9GB > 62.8GB
    [finding] = only(facts, "memory_overcommitted")
    assert "max_connections x work_mem 12.5 GiB" in finding.evidence
    set_setting(facts, "work_mem", str(4 * 1024))
    assert "memory_overcommitted" not in ids(facts)


def test_the_built_in_profiles_do_not_overcommit_memory():
    staged = {f.id: f.stage for f in advise(hosts.openzfs(), builtin("oltp-safe").settings)}
    assert staged["memory_overcommitted"] == "resolved"
    safe = builtin("oltp-safe").settings  # the same, with the formulas before issue 12:
    pgtune = replace(safe, module={"zfs_arc_max": "ram - shared_buffers - max(1GB, ram / 8)"},
                     postgres={**safe.postgres, "work_mem": "max(4MB, (ram - shared_buffers)"
                                                            " / ((connections + 8) * 3))"})
    assert "memory_overcommitted" in {f.id for f in advise(hosts.openzfs(), pgtune)}


def test_huge_pages_sized_to_shared_buffers():
    facts = hosts.openzfs()  # 16GB shared_buffers, vm.nr_hugepages=0
    [finding] = only(facts, "huge_pages_not_sized")
    assert "vm.nr_hugepages=8602 (shared_buffers + 5%" in finding.action
    cluster(facts).settings.append(hosts._row("shared_memory_size_in_huge_pages", "8420", None,
                                              "internal", "integer"))
    assert "vm.nr_hugepages=8420 (what PostgreSQL reports" in only(
        facts, "huge_pages_not_sized")[0].action
    facts.sysctls["vm.nr_hugepages"] = 8602
    assert "huge_pages_not_sized" not in ids(facts)


def test_memory_overcommit_mode():
    facts = hosts.openzfs()  # vm.overcommit_memory=2
    assert "memory_overcommit_default" not in ids(facts)
    facts.sysctls["vm.overcommit_memory"] = 0
    assert "OOM killer" in only(facts, "memory_overcommit_default")[0].why


def test_full_page_writes_off_on_a_standby():
    facts = hosts.openzfs()  # full_page_writes=off, not a standby
    assert "full_page_writes_off_standby" not in ids(facts)
    cluster(facts).settings.append(hosts._row("primary_conninfo", "host=primary", None,
                                              "sighup", "string"))
    [finding] = only(facts, "full_page_writes_off_standby")
    assert "pg_rewind" in finding.why and "cascading" in finding.why
    set_setting(facts, "full_page_writes", "on")
    assert "full_page_writes_off_standby" not in ids(facts)
    facts = hosts.openzfs()  # a primary that names synchronous standbys
    cluster(facts).settings.append(hosts._row("synchronous_standby_names", "replica1", None,
                                              "sighup", "string"))
    assert "has standbys" in only(facts, "full_page_writes_off_standby")[0].evidence


def _with_stats(facts: HostFacts, **values) -> HostFacts:
    cluster(facts).stats = replace(cluster(facts).stats, **values)
    return facts


def _captured_stats() -> postgres.ServerStats:
    """A fleet host with a standby streaming, a spare slot and 19 requested checkpoints."""
    return postgres.parse_stats(fuse_extra("psql_stats_busy").split("\n", 2)[2])


def test_full_page_writes_off_with_replication_slots_or_standbys():
    facts = hosts.openzfs()  # full_page_writes=off, a primary alone (no standby, no slot)
    assert cluster(facts).stats.standbys == 0 and "full_page_writes_off_standby" not in ids(facts)
    cluster(facts).stats = _captured_stats()
    [finding] = only(facts, "full_page_writes_off_standby")
    assert "1 standby(s) streaming" in finding.evidence
    assert "pozol_standby (active), pozol_spare (inactive)" in finding.evidence
    assert "were not read" not in finding.action
    # A slot alone, kept for a standby that is away, is enough; a logical slot is not.
    spare = postgres.ReplicationSlot("pozol_spare", "physical", False)
    _with_stats(facts, standbys=0, slots=[spare])
    assert "pozol_spare (inactive)" in only(facts, "full_page_writes_off_standby")[0].evidence
    _with_stats(facts, slots=[postgres.ReplicationSlot("cdc", "logical", True)])
    assert "full_page_writes_off_standby" not in ids(facts)
    _with_stats(facts, in_recovery=True)  # a standby restored without primary_conninfo
    assert "in recovery" in only(facts, "full_page_writes_off_standby")[0].evidence
    set_setting(facts, "full_page_writes", "on")
    assert "full_page_writes_off_standby" not in ids(facts)


def test_full_page_writes_off_with_replication_unknown_says_to_check():
    facts = hosts.openzfs()
    cluster(facts).stats = None  # facts from a discovery before standbys were read
    cluster(facts).settings.append(hosts._row("synchronous_standby_names", "replica1", None,
                                              "sighup", "string"))
    assert "pg_replication_slots" in only(facts, "full_page_writes_off_standby")[0].action


def test_requested_checkpoints_dominate():
    facts = hosts.openzfs()  # 412 timed, 37 requested: fine
    assert "checkpoints_requested" not in ids(facts)
    cluster(facts).stats = _captured_stats()  # real: max_wal_size=32MB under pgbench
    [finding] = only(facts, "checkpoints_requested")
    assert "requested 19, timed 0 since 2026-11-23 22:02:34" in finding.evidence
    assert "max_wal_size=1024MB, checkpoint_timeout=300s" in finding.evidence
    assert "Raise max_wal_size" in finding.action and "CHECKPOINT" in finding.why
    _with_stats(facts, checkpoints_timed=19)  # as many timed: not dominated
    assert "checkpoints_requested" not in ids(facts)
    _with_stats(facts, checkpoints_timed=1, checkpoints_requested=5)  # too few to tell
    assert "checkpoints_requested" not in ids(facts)
    _with_stats(facts, checkpoints_requested=50, in_recovery=True)  # restartpoints
    assert "checkpoints_requested" not in ids(facts)
    cluster(facts).stats = None
    assert "checkpoints_requested" not in ids(facts)


def test_transparent_huge_pages_always():
    facts = hosts.fuse()  # the capture: madvise/madvise, as Debian ships it
    assert (facts.thp_enabled, facts.thp_defrag) == ("madvise", "madvise")
    assert "transparent_huge_pages_always" not in ids(facts)
    facts.thp_enabled = "always"
    [finding] = only(facts, "transparent_huge_pages_always")
    assert finding.severity == "info" and "enabled=always, defrag=madvise" in finding.evidence
    assert "shmem_enabled" in finding.why and "transparent_hugepage=madvise" in finding.action
    facts.thp_defrag = "always"  # page faults wait for direct compaction
    assert only(facts, "transparent_huge_pages_always")[0].severity == "warning"
    facts.clusters = []
    assert "transparent_huge_pages_always" not in ids(facts)
    facts = hosts.fuse()
    facts.thp_enabled = None  # not known: no finding
    assert "transparent_huge_pages_always" not in ids(facts)


def test_wal_compression_on_a_compressed_dataset():
    facts = hosts.openzfs()  # wal_compression=lz4, WAL dataset compressed
    [finding] = only(facts, "wal_compression_on_zfs")
    assert "wal_compression=lz4" in finding.evidence
    set_setting(facts, "wal_compression", "off")
    assert "wal_compression_on_zfs" not in ids(facts)


def test_max_connections_high():
    facts = hosts.openzfs()  # 200 connections
    assert "max_connections_high" not in ids(facts)
    set_setting(facts, "max_connections", "1000")
    assert "PgBouncer" in only(facts, "max_connections_high")[0].action


def test_autotrim_off_on_solid_state_pools():
    facts = hosts.openzfs()  # autotrim=off on NVMe
    [finding] = only(facts, "autotrim_off_ssd")
    assert finding.subject == "tank" and "zpool set autotrim=on tank" in finding.action
    facts.pools[0].autotrim = "on"
    assert "autotrim_off_ssd" not in ids(facts)
    assert "autotrim_off_ssd" not in ids(hosts.fuse())  # zfs-fuse: no such property


def test_disks_behind_a_raid_controller():
    facts = hosts.openzfs()
    assert "raid_controller_below_zfs" not in ids(facts)
    facts.disks[-1].model = "PERC H730P Mini"
    [finding] = only(facts, "raid_controller_below_zfs")
    assert "PERC H730P Mini" in finding.evidence and "HBA" in finding.action
