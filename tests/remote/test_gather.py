"""discover() against strict fake hosts: a real zfs-fuse capture replayed, an OpenZFS
2.2 host and a bare host written from fixtures, and a host that answers with hostile names.
"""

from __future__ import annotations

import json

import pytest

from apps.remote import gather
from apps.remote.commands import Command, cmd
from apps.remote.facts import bloat, postgres, zfs
from apps.remote.facts.host import HostFacts, ZfsFacts
from tests.remote.fakeshell import FakeShell
from tests.remote.fixtures.hosts import ZFS_FUSE, FixtureHost, fuse_extra, replay_transcript


def psql_16(sql: str, database: str = "postgres") -> Command:
    """Written out rather than built by apps.remote.cluster, so the strict fake shell
    fails if the command gather sends ever changes shape."""
    return cmd("sh", "-c", 'cd / && exec "$@"', "sh", "timeout", 30, "runuser", "-u",
               "postgres", "--", "/usr/lib/postgresql/16/bin/psql", "-h", "/var/run/postgresql",
               "-p", 5432, "-X", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-d", database,
               "-c", sql)


PSQL_16 = psql_16(postgres.SETTINGS_QUERY)
# PostgreSQL 16 still keeps its checkpoint counters in pg_stat_bgwriter.
PSQL_16_STATS = psql_16(postgres.stats_query(16))
PSQL_16_DATABASES = psql_16(bloat.LISTING_QUERY)
# Round 4: of the databases psql_1500_databases.txt lists, the one of 32 MiB or more.
DATABASES_16 = {"psql:1500:db:app": psql_16(bloat.TABLES_QUERY, "app")}
TOO_SMALL = "postgres: not queried, 7 MiB: too small to hold 32 MiB of dead rows"
NVME = {f"nvme:{d}": cmd("nvme", "get-feature", "-f", "6", f"/dev/{d}")
        for d in ("nvme0n1", "nvme1n1", "nvme2n1")}


def openzfs_22_facts() -> ZfsFacts:
    version = zfs.ZfsVersion("2.2.4-1", "2.2.4-1")
    caps = zfs.baseline_capabilities(zfs.OPENZFS, version)
    return ZfsFacts("OpenZFS", zfs.OPENZFS, "2.2.4-1", "2.2.4-1", "2.2.4-1", caps)


def openzfs_22_host(host: FixtureHost | None = None, pools: tuple[str, ...] = ("tank",),
                    psql: bool = True, databases: dict[str, Command] = DATABASES_16) -> FakeShell:
    host = host or FixtureHost("openzfs-2.2")
    postmaster = [postgres.Process(1500, 1, "postgres", "/usr/lib/postgresql/16/bin/postgres")]
    shell = FakeShell()
    host.script(shell, gather.host_probes())
    host.script(shell, {**gather.zfs_probes(), **NVME,
                        **gather.postmaster_probes(postmaster)})
    data = gather.zfs_data_probes(openzfs_22_facts(), list(pools))
    psql_probes = {"psql:1500": PSQL_16, "psql:1500:stats": PSQL_16_STATS,
                   "psql:1500:databases": PSQL_16_DATABASES}
    host.script(shell, {**data, **(psql_probes if psql else {})})
    return host.script(shell, databases) if psql and databases else shell


# -- (a) a real zfs-fuse host with PostgreSQL ---------------------------------------

@pytest.fixture(scope="module")
def fuse_facts():
    shell = replay_transcript()
    facts = gather.discover(shell)
    return facts, shell


def test_zfs_fuse_host_in_three_round_trips(fuse_facts):
    facts, shell = fuse_facts
    assert len(shell.calls) == 3  # no database of 32 MiB or more: no fourth
    assert facts.zfs.implementation == "zfs-fuse" and facts.zfs.version is None


def test_zfs_fuse_missing_commands_become_capabilities(fuse_facts):
    caps = fuse_facts[0].zfs.capabilities
    assert not caps.version_command and not caps.list_parsable
    assert not caps.sync_property and not caps.redundant_metadata_property
    assert not caps.zpool_fragmentation and not caps.module_params
    assert caps.compression == ("on", "off", "lzjb", "gzip", "gzip-[1-9]", "zle")
    assert fuse_facts[0].module_params is None


def test_zfs_fuse_pools_and_datasets(fuse_facts):
    facts = fuse_facts[0]
    pools = {p.name: p for p in facts.pools}
    assert pools["fast"].has_log and pools["fast"].vdevs[0].kind == "mirror"
    assert pools["tank"].spa_version == "23" and pools["tank"].ashift is None
    assert pools["tank"].autotrim is None  # zfs-fuse has no autotrim: not asked
    data = {d.name: d for d in facts.datasets}["tank/pg/data"]
    assert data.properties["recordsize"].value == "8192" and data.compressratio > 1.5
    assert "sync" not in data.properties and not data.exact_sizes
    assert any("human units" in note for note in facts.notes)


def test_zfs_fuse_cluster_databases_too_small_to_read(fuse_facts):
    # Spliced from a fresh fleet test host (fixtures/README.md): pgbench -i -s 1 only.
    [cluster] = fuse_facts[0].clusters
    assert (cluster.bloat.databases, cluster.bloat.read) == (2, [])
    assert cluster.bloat.not_read == [
        "pgbench: not queried, 22 MiB: too small to hold 32 MiB of dead rows",
        "postgres: not queried, 7 MiB: too small to hold 32 MiB of dead rows"]
    assert cluster.bloat.pg_repack_available is None


def test_zfs_fuse_cluster_mapped_to_its_datasets(fuse_facts):
    [cluster] = fuse_facts[0].clusters
    assert (cluster.version, cluster.port, cluster.owner) == ("15", 5499, "postgres")
    assert cluster.server_version_num // 10000 == 15 and cluster.data_checksums is True
    assert (cluster.data_dataset, cluster.wal_dataset) == ("tank/pg/data", "tank/pg/wal")
    assert cluster.bin_dir == "/usr/lib/postgresql/15/bin" and cluster.error is None
    assert {"shared_buffers", "full_page_writes"} <= {s.name for s in cluster.settings}
    # Spliced from a fleet test host (fixtures/README.md): a primary alone, no checkpoint yet.
    assert cluster.stats == postgres.ServerStats(False, 0, [], 0, 0, "2026-11-23 22:02:34.01879+00")


def test_zfs_fuse_arcstats_and_host(fuse_facts):
    facts = fuse_facts[0]
    assert facts.arcstats.ratio_formula == "hits/(hits+misses)" and facts.arcstats.c_max
    assert facts.os.id == "debian" and facts.mem_total and facts.has_systemd is False
    assert facts.sysctls["vm.dirty_ratio"] >= 0
    assert (facts.thp_enabled, facts.thp_defrag) == ("madvise", "madvise")


def test_facts_are_json(fuse_facts):
    assert json.loads(json.dumps(fuse_facts[0].to_dict()))["zfs"]["dialect"] == "zfs-fuse"


# -- (b) an OpenZFS 2.2 host with NVMe write caches -------------------------------------

def test_openzfs_22_host():
    shell = openzfs_22_host()
    facts = gather.discover(shell)
    assert len(shell.calls) == 4  # the fourth reads the databases the third listed
    assert facts.zfs.version == "2.2.4-1" and facts.zfs.capabilities.sync_property
    assert facts.zfs.capabilities.module_params and not facts.zfs.capabilities.json_output
    assert facts.has_systemd and facts.cpus == 16 and facts.mem_dirty == 4312 * 1024
    assert facts.module_params["zfs_bclone_enabled"] == "0"
    assert facts.arcstats.ratio_formula == "hits/(hits+iohits+misses)"
    assert facts.notes == [] and facts.skipped == []


def test_openzfs_22_disks_and_write_caches():
    disks = {d.name: d for d in gather.discover(openzfs_22_host()).disks}
    assert disks["nvme0n1"].volatile_write_cache is True
    assert disks["nvme1n1"].volatile_write_cache is False
    assert disks["nvme2n1"].volatile_write_cache is None  # no VWC on that controller
    assert disks["sda"].write_cache == "write back" and disks["sda"].volatile_write_cache is None
    assert "loop0" not in disks and disks["nvme0n1p1"].parent == "nvme0n1"


def test_openzfs_22_pool_and_datasets():
    facts = gather.discover(openzfs_22_host())
    [tank] = facts.pools
    assert (tank.ashift, tank.fragmentation, tank.spa_version) == (12, 12, None)
    assert tank.has_log and tank.has_cache and tank.spares[0].name == "sdb"
    assert (tank.autotrim, tank.last_scrub) == ("off", "2024-09-08T00:36:42")
    wal = {d.name: d for d in facts.datasets}["tank/pg/wal"]
    assert wal.properties["sync"] == zfs.PropertyValue("standard", "default")
    assert wal.properties["redundant_metadata"].inherited_from == "tank"
    assert wal.exact_sizes and wal.compressratio == 1.18


def test_openzfs_22_cluster():
    [cluster] = gather.discover(openzfs_22_host()).clusters
    assert (cluster.pid, cluster.version, cluster.server_version_num) == (1500, "16", 160004)
    assert cluster.data_checksums is False and cluster.socket_dir == "/var/run/postgresql"
    # The data directory is itself a mountpoint; pg_wal is a symlink to another dataset.
    assert (cluster.data_dataset, cluster.wal_dataset) == ("tank/pg/data", "tank/pg/wal")
    restart = [s.name for s in cluster.settings if s.pending_restart]
    assert restart == ["shared_buffers"]
    assert (cluster.stats.checkpoints_timed, cluster.stats.checkpoints_requested) == (412, 37)
    assert cluster.stats.standbys == 0 and cluster.stats.slots == []


def test_openzfs_22_dead_tuples_of_the_listed_databases():
    [cluster] = gather.discover(openzfs_22_host()).clusters
    found = cluster.bloat
    assert (found.databases, found.pg_repack_available) == (2, "1.5.1")
    [app] = found.read
    assert (app.name, app.size, app.tables, app.pg_repack_installed) == (
        "app", 20 * 1024**3, 42, "1.5.1")
    assert [t.qualified_name for t in app.top] == ["public.orders", "public.sessions"]
    assert found.not_read == [TOO_SMALL]


@pytest.mark.parametrize(("answer", "exit_code", "why"), [
    # Captured on a fleet test host while another session held the table's lock.
    (fuse_extra("psql_tables_locked").split("\n", 2)[2], 1,
     "ERROR:  canceling statement due to lock timeout"),
    ('psql: error: connection to server on socket "/var/run/postgresql/.s.PGSQL.5432"'
     ' failed: FATAL:  too many connections for database "app"\n', 2,
     'psql: error: connection to server on socket "/var/run/postgresql/.s.PGSQL.5432"'
     ' failed: FATAL:  too many connections for database "app"'),
], ids=["lock-timeout", "no-connection"])
def test_a_database_whose_query_fails_is_named_with_the_error(answer, exit_code, why):
    host = FixtureHost("openzfs-2.2")
    host.overrides["psql_1500_db_app"] = answer
    host.exit_codes["psql_1500_db_app"] = exit_code
    [cluster] = gather.discover(openzfs_22_host(host)).clusters
    assert cluster.bloat.read == [] and cluster.bloat.not_read == [f"app: {why}", TOO_SMALL]


def test_a_cluster_whose_listing_fails_has_no_dead_tuples_and_no_fourth_round_trip():
    host = FixtureHost("openzfs-2.2")
    host.overrides["psql_1500_databases"] = "ERROR:  canceling statement due to statement timeout\n"
    host.exit_codes["psql_1500_databases"] = 1
    shell = openzfs_22_host(host, databases={})
    [cluster] = gather.discover(shell).clusters
    assert cluster.bloat is None and cluster.settings and len(shell.calls) == 3


def test_a_postmaster_on_a_clone_dataset_is_a_clone_not_a_cluster_of_the_host():
    host = FixtureHost("openzfs-2.2")
    get = host.output("zfs_get").split("\n", 1)[1].rsplit("\n@@pozol@@", 1)[0]
    host.overrides["zfs_get"] = get + "tank/pg/data\tpozol:clone\tmy-clone\tlocal\n"
    facts = gather.discover(openzfs_22_host(host))
    assert facts.clusters == [] and facts.clones == ["/var/lib/postgresql/16/main"]


def test_a_postmaster_on_an_unmarked_dataset_is_a_cluster_of_the_host():
    host = FixtureHost("openzfs-2.2")
    get = host.output("zfs_get").split("\n", 1)[1].rsplit("\n@@pozol@@", 1)[0]
    # zfs get prints an unset user property as "-" with source "-".
    host.overrides["zfs_get"] = get + "tank/pg/data\tpozol:clone\t-\t-\n"
    facts = gather.discover(openzfs_22_host(host))
    assert [c.data_dir for c in facts.clusters] == ["/var/lib/postgresql/16/main"]
    assert facts.clones == []


def test_exact_command_lines_on_openzfs():
    probes = gather.zfs_data_probes(openzfs_22_facts(), ["tank"])
    assert probes["zfs_get"].text == (
        "zfs get -Hp -r -t filesystem,volume -o name,property,value,source "
        "recordsize,compression,compressratio,atime,logbias,primarycache,xattr,dedup,"
        "usedbysnapshots,pozol:clone tank")
    assert probes["zpool_list"].text == (
        "zpool list -Hp -o name,size,allocated,free,fragmentation,capacity,health tank")


# -- (c) a host with neither ZFS nor PostgreSQL -----------------------------------------

def test_host_without_zfs_or_postgres_is_valid():
    shell = FixtureHost("plain").script(FakeShell(), gather.host_probes())
    facts = gather.discover(shell)
    assert len(shell.calls) == 1
    assert facts.zfs is None and "zfs" in facts.zfs_absent_reason
    assert facts.pools == [] and facts.clusters == [] and facts.arcstats is None
    assert facts.arch == "aarch64" and facts.has_systemd is False
    assert [d.name for d in facts.disks] == ["mmcblk0", "mmcblk0p1", "sda"]
    assert "vm.nr_hugepages" not in facts.sysctls
    assert facts.thp_enabled is None and facts.thp_defrag is None  # a kernel without THP
    assert json.dumps(facts.to_dict())


def test_zfs_that_will_not_start_is_a_reason_not_a_crash():
    host = FixtureHost("openzfs-2.2")
    host.overrides |= {"zfs_version": "The ZFS modules are not loaded.\n", "zfs_kmod": ""}
    host.exit_codes |= {"zfs_version": 1, "zfs_kmod": 1}
    shell = FakeShell()
    host.script(shell, gather.host_probes())
    postmaster = [postgres.Process(1500, 1, "postgres", "/usr/lib/postgresql/16/bin/postgres")]
    host.script(shell, {**gather.zfs_probes(), **NVME,
                        **gather.postmaster_probes(postmaster)})
    host.script(shell, {"psql:1500": PSQL_16, "psql:1500:stats": PSQL_16_STATS,
                        "psql:1500:databases": PSQL_16_DATABASES})
    host.script(shell, DATABASES_16)
    facts = gather.discover(shell)
    assert facts.zfs is None and "modules are not loaded" in facts.zfs_absent_reason
    assert facts.clusters[0].data_dataset is None and facts.clusters[0].settings


# -- hostile names coming back from a host ----------------------------------------------

def test_hostile_pool_and_dataset_names_are_never_used():
    host = FixtureHost("openzfs-2.2")
    host.overrides["zpool_names"] = "tank\nevil;reboot\n"
    host.overrides["zfs_list"] = (host.directory / "zfs_list.txt").read_text() + (
        "tank/$(reboot)\tfilesystem\t1\t1\t1\t/tank/x\n")
    shell = openzfs_22_host(host)
    facts = gather.discover(shell)
    assert not any("reboot" in call for call in shell.calls)
    skipped = {(s.kind, s.value) for s in facts.skipped}
    assert skipped == {("pool", "evil;reboot"), ("dataset", "tank/$(reboot)")}
    assert all(s.reason for s in facts.skipped)
    assert "tank/$(reboot)" not in {d.name for d in facts.datasets}


def test_hostile_socket_dir_skips_psql_with_a_reason():
    host = FixtureHost("openzfs-2.2")
    pidfile = "1500\n/var/lib/postgresql/16/main\n1\n5432\n/tmp/$(reboot)\n*\n"
    host.overrides["pg_1500_pidfile"] = pidfile
    shell = openzfs_22_host(host, psql=False)
    facts = gather.discover(shell)
    [cluster] = facts.clusters
    assert cluster.settings == [] and "path" in cluster.error
    assert facts.skipped[0].kind == "postgres cluster"
    assert not any("reboot" in call for call in shell.calls)


def test_hostile_database_names_are_never_used():
    host = FixtureHost("openzfs-2.2")
    host.overrides["psql_1500_databases"] = (
        '{"databases" : 4, "largest" : [{"name" : "app", "size" : 900000000},'
        ' {"name" : "x;reboot", "size" : 800000000},'
        ' {"name" : "host=evil.example dbname=app", "size" : 700000000},'
        ' {"name" : "Reports", "size" : 600000000}], "pg_repack" : null}\n')
    shell = openzfs_22_host(host, databases={"psql:1500:db:app": DATABASES_16["psql:1500:db:app"]})
    facts = gather.discover(shell)
    assert not any("reboot" in call or "evil" in call or "Reports" in call
                   for call in shell.calls)
    [cluster] = facts.clusters
    assert [d.name for d in cluster.bloat.read] == ["app"]
    assert [line.split(":")[0] for line in cluster.bloat.not_read] == [
        "x;reboot", "host=evil.example dbname=app", "Reports"]
    assert all("not queried" in line for line in cluster.bloat.not_read)
    assert {s.kind for s in facts.skipped} == {"postgres database"} and len(facts.skipped) == 3


def test_hostile_owner_is_refused():
    host = FixtureHost("openzfs-2.2")
    host.overrides["pg_1500_owner"] = "root --help\n"
    facts = gather.discover(openzfs_22_host(host, psql=False))
    assert facts.clusters[0].error.startswith("not queried: invalid user name")


# -- stored facts read back: HostFacts.from_dict --------------------------------------

def _hostile_host() -> FakeShell:
    host = FixtureHost("openzfs-2.2")
    host.overrides["zpool_names"] = "tank\nevil;reboot\n"
    host.overrides["pg_1500_pidfile"] = "1500\n/var/lib/postgresql/16/main\n1\n5432\n/tmp/$(x)\n"
    return openzfs_22_host(host, psql=False)


@pytest.mark.parametrize("shell", [
    replay_transcript, openzfs_22_host,
    lambda: FixtureHost("plain").script(FakeShell(), gather.host_probes()),
    _hostile_host,  # skipped names, a cluster with an error and no settings
], ids=["zfs-fuse", "openzfs-2.2", "plain", "hostile"])
def test_stored_facts_read_back_as_discovered(shell):
    facts = gather.discover(shell())
    assert HostFacts.from_dict(facts.to_dict()) == facts
    stored = json.loads(json.dumps(facts.to_dict()))  # as Host.facts keeps them
    assert HostFacts.from_dict(stored) == facts


def test_the_captured_facts_file_reads_back_as_discovery_makes_it_now():
    stored = json.loads((ZFS_FUSE / "facts.json").read_text())
    read = HostFacts.from_dict(stored)
    assert read == gather.discover(replay_transcript())
    assert read.zfs.capabilities.compression == tuple(stored["zfs"]["capabilities"]["compression"])
    assert read.datasets[0].properties["compression"].source in ("local", "default", "inherited")


def test_facts_stored_with_gaps_read_back_with_the_gaps_unknown():
    stored = json.loads((ZFS_FUSE / "facts.json").read_text())
    del stored["arcstats"], stored["sysctls"], stored["zfs"]["capabilities"]["multi_snapshot"]
    del stored["disks"][0]["write_cache"], stored["clusters"][0]["settings"]
    stored["probe_from_the_future"], stored["tools"] = {"x": 1}, None
    read = HostFacts.from_dict(stored)
    assert read.arcstats is None and read.sysctls == {} and read.tools == {}
    assert read.zfs.capabilities.multi_snapshot is None  # not known, rather than False
    assert read.zfs.capabilities.sync_property is False  # what was stored stays
    assert read.disks[0].write_cache is None and read.clusters[0].settings == []
    empty = HostFacts.from_dict({})
    assert empty.mem_total is None and empty.zfs is None and empty.pools == []


def test_the_log_names_the_facts_a_bundle_reads_not_its_framing_script():
    bundle = gather.bundle({"os_release": cmd("cat", "/etc/os-release"),
                            "uname_r": cmd("uname", "-r")})
    assert bundle.redacted() == "read facts: os_release, uname_r"
    assert "@@pozol@@" in bundle.text and "@@pozol@@" in bundle.redacted_text()
