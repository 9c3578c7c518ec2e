"""Profile content: the built-ins as the product spec says, and validation of custom ones."""

from __future__ import annotations

import pytest

from apps.remote.facts import system
from apps.remote.facts.postgres import Setting
from apps.tuning.core import pgsettings, profiles
from apps.tuning.core.profiles import BUILTINS, ProfileSettings, builtin


def test_builtins_and_their_slugs():
    assert [p.slug for p in BUILTINS] == ["oltp-safe", "oltp-bounded-loss", "analytics",
                                          "clone-dev"]
    assert builtin("oltp-safe").name == "OLTP on ZFS (safe)"
    with pytest.raises(KeyError):
        builtin("turbo")


def test_oltp_safe():
    s = builtin("oltp-safe").settings
    assert s.zfs["data"] == {"recordsize": "16K", "compression": "lz4", "atime": "off",
                             "logbias": "latency", "primarycache": "all"}
    assert s.zfs["wal"]["recordsize"] == "128K" and s.zfs["wal"]["logbias"] == "latency"
    assert {s.postgres[k] for k in ("full_page_writes", "wal_init_zero", "wal_recycle")} == {"off"}
    assert {"shared_buffers", "effective_cache_size", "work_mem", "maintenance_work_mem",
            "wal_buffers"} <= set(s.postgres)
    assert set(s.module) == {"zfs_arc_max"} and "shared_buffers" in s.module["zfs_arc_max"]
    assert s.sysctl["vm.dirty_background_bytes"].endswith("/ 4")
    assert s.requires_acknowledgement == ()
    assert "sync" not in s.zfs["data"] and "synchronous_commit" not in s.postgres


def test_bounded_loss_is_oltp_plus_loss_and_needs_acknowledgement():
    safe, loss = builtin("oltp-safe").settings, builtin("oltp-bounded-loss").settings
    assert loss.module == {**safe.module, "zfs_txg_timeout": "1"}
    assert loss.zfs["data"] == {**safe.zfs["data"], "sync": "disabled"}
    assert loss.zfs["wal"]["sync"] == "disabled"
    assert loss.postgres == {**safe.postgres, "synchronous_commit": "off"}
    assert loss.requires_acknowledgement == ("bounded_loss",)


def test_analytics_and_clone_dev():
    analytics, clone = builtin("analytics").settings, builtin("clone-dev").settings
    assert analytics.zfs["data"]["recordsize"] == "128K"
    assert analytics.zfs["data"]["compression"] == "zstd"
    assert {"random_page_cost", "effective_io_concurrency"} <= set(analytics.postgres)
    assert clone.module == {} and clone.sysctl == {}  # nothing host-wide for a clone
    assert clone.requires_acknowledgement == ("bounded_loss",)
    assert "fsync" not in clone.postgres and "recordsize" not in clone.zfs["data"]


@pytest.mark.parametrize("profile", BUILTINS, ids=lambda p: p.slug)
def test_builtins_round_trip_and_cite_their_sources(profile):
    assert ProfileSettings.from_dict(profile.settings.to_dict()) == profile.settings
    assert profile.citations and all(" — " in c and ": " in c for c in profile.citations)


def test_from_dict_accepts_what_postgresql_accepts():
    settings = ProfileSettings.from_dict({"postgres": {
        "wal_buffers": "-1", "work_mem": "64kB", "shared_buffers": "2GB * 2",
        "synchronous_commit": "OFF", "wal_level": "replica", "huge_pages": "true",
        "checkpoint_timeout": "15min", "pg_stat_statements.max": "10000",
        "data_checksums": "on", "random_page_cost": "1.1"}})
    assert settings.postgres["shared_buffers"] == "2GB * 2"


def test_the_shipped_pg15_table_matches_its_sources():
    table = pgsettings.table(15)
    assert table["work_mem"] == pgsettings.Spec("work_mem", "integer", "kB", 64, 2147483647)
    assert table["shared_buffers"].unit == "8kB" and table["wal_buffers"].min_val == -1
    assert "remote_apply" in table["synchronous_commit"].enumvals
    # every row of postgres --describe-config is in it, plus the internal ones it omits
    assert len(table) >= 307 and "data_checksums" in table


def test_a_hosts_own_pg_settings_row_wins_over_the_reference():
    # PostgreSQL 11 counted vacuum_cost_delay in whole ms; 12 made it real (the reference)
    row = Setting("vacuum_cost_delay", "20", "ms", "user", "integer", "default", "20", False)
    assert pgsettings.spec_of("vacuum_cost_delay", row).vartype == "integer"
    assert pgsettings.reference()["vacuum_cost_delay"].vartype == "real"
    # limits come from the reference: discovery does not read min_val/max_val
    row = Setting("work_mem", "4096", "kB", "user", "integer", "default", "4096", False)
    spec = pgsettings.spec_of("work_mem", row)
    assert pgsettings.problem(spec, "4MB") is None
    assert "below the minimum, 64kB" in pgsettings.problem(spec, 32 * 1024)  # bytes


def test_the_sysctls_are_the_ones_discovery_reads():
    assert set(profiles.SYSCTLS) == set(system.VM_SYSCTLS)


def test_from_dict_accepts_a_custom_profile():
    settings = ProfileSettings.from_dict({
        "zfs": {"data": {"recordsize": "32K", "compression": "zstd-3"}},
        "module": {"zfs_txg_timeout": 3},
        "sysctl": {"vm.swappiness": "1"},
        "postgres": {"shared_buffers": "ram / 8", "search_path": "'$user', public"},
    })
    assert settings.module == {"zfs_txg_timeout": "3"} and settings.requires_acknowledgement == ()


def test_a_data_or_wal_recordsize_may_be_left_to_an_experiment():
    settings = ProfileSettings.from_dict({"zfs": {"data": {"recordsize": "experiment"},
                                                  "wal": {"recordsize": " Experiment "}}})
    assert settings.zfs == {"data": {"recordsize": "experiment"},
                            "wal": {"recordsize": "experiment"}}
    assert ProfileSettings.from_dict(settings.to_dict()) == settings


@pytest.mark.parametrize(("data", "message"), [
    ({"kernel": {}}, "unknown layer 'kernel'"),
    ({"zfs": {"logs": {}}}, "unknown dataset role 'logs'"),
    ({"zfs": {"data": {"dedup": "on"}}}, "not a property a profile may set"),
    ({"zfs": {"data": {"sync": "maybe"}}}, "not one of standard"),
    ({"zfs": {"data": {"compression": "lz5"}}}, "not a ZFS compression"),
    ({"zfs": {"data": {"recordsize": "12K"}}}, "power of two"),
    ({"module": {"arc_max": "1"}}, "is not zfs_<name>"),
    ({"sysctl": {"kernel.panic": "1"}}, "is not vm.<name>"),
    ({"sysctl": {"vm.dirty_bytes": "1GB", "vm.dirty_ratio": "10"}}, "not both"),
    ({"postgres": {"Shared Buffers": "1GB"}}, "PostgreSQL setting name"),
    ({"postgres": {"shared_buffers": "ram ** 2"}}, "not allowed"),
    ({"postgres": {"work_mem": "4MB\n"}}, ""),
    ({"postgres": {"work_mem": "4MB\nfsync = off"}}, "control characters"),
    ({"postgres": {"work_mem": ["4MB"]}}, "text or a number"),
    ({"requires_acknowledgement": ["yolo"]}, "unknown risk 'yolo'"),
    ({"zfs": ["data"]}, "expected a mapping"),
    # Values PostgreSQL itself would refuse, caught before any host is involved.
    ({"postgres": {"work_mem": "lots"}}, "postgres.work_mem: 'lots' is not a size"),
    ({"postgres": {"shared_buffers": "-1GB"}}, "shared_buffers: .* below the minimum, 128kB"),
    ({"postgres": {"shared_buffers": "999999TB"}}, "above the maximum"),
    ({"postgres": {"work_mem": "0"}}, "below the minimum, 64kB"),
    ({"postgres": {"wrok_mem": "4MB"}},
     "no such setting in PostgreSQL 13 to 18; did you mean work_mem"),
    ({"postgres": {"synchronous_commit": "sometimes"}}, "not one of local, remote_write"),
    ({"postgres": {"fsync": "maybe"}}, "not on or off"),
    ({"postgres": {"checkpoint_timeout": "2d"}}, "above the maximum, 86400s"),
    ({"postgres": {"random_page_cost": "nan"}}, "not a number"),
    ({"postgres": {"work_mem": "ram / 0"}}, "division by zero"),
    ({"module": {"zfs_txg_timeout": "0"}}, "module.zfs_txg_timeout: 0 is below the minimum"),
    ({"module": {"zfs_arc_max": "-1"}}, "below the minimum"),
    ({"module": {"zfs_arc_max": "lots"}}, "not a whole number"),
    ({"sysctl": {"vm.dirty_ratio": "150"}}, "above the maximum, 100"),
    ({"sysctl": {"vm.max_map_count": "1"}}, "does not manage vm.max_map_count"),
    # "experiment" (a host's recordsize experiment's winner) only where an experiment runs.
    ({"zfs": {"data": {"recordsize": "winner"}}}, "power of two from 512 to 16M, or"
                                                  " 'experiment'"),
    ({"zfs": {"other": {"recordsize": "experiment"}}}, "zfs.other.recordsize: 'experiment'"
                                                       " only on the data or wal role"),
    ({"zfs": {"data": {"compression": "experiment"}}}, "zfs.data.compression: 'experiment'"
                                                       " .* is only for recordsize"),
    ({"zfs": {"wal": {"logbias": "Experiment"}}}, "zfs.wal.logbias: 'experiment'"),
    ({"postgres": {"shared_buffers": "experiment"}}, "postgres.shared_buffers: 'experiment'"),
    ({"postgres": {"search_path": "experiment"}}, "only for recordsize"),
    ({"sysctl": {"vm.swappiness": "experiment"}}, "sysctl.vm.swappiness: 'experiment'"),
    ({"module": {"zfs_arc_max": "experiment"}}, "module.zfs_arc_max: 'experiment'"),
])
def test_from_dict_refuses_with_a_clear_message(data, message):
    if message == "":  # surrounding whitespace is stripped, not refused
        assert ProfileSettings.from_dict(data).postgres["work_mem"] == "4MB"
        return
    with pytest.raises(ValueError, match=message):
        ProfileSettings.from_dict(data)


def test_every_risk_is_explained():
    assert all(profiles.RISKS[r] for r in ("bounded_loss", "unsafe_fsync"))


def test_oltp_profiles_set_planner_costs_for_the_storage_too():
    for slug in ("oltp-safe", "oltp-bounded-loss", "analytics"):
        postgres = builtin(slug).settings.postgres
        assert postgres["random_page_cost"] == "4 if disk == 'hdd' else 1.1"
        assert "1000 if disk == 'nvme'" in postgres["effective_io_concurrency"]
