"""Plans from fixture facts: what changes, how, in which order, and nothing twice."""

from __future__ import annotations

import copy
from dataclasses import replace

from apps.remote.facts.host import HostFacts
from apps.tuning.core.changes import project
from apps.tuning.core.planner import ORDER, Plan, plan
from apps.tuning.core.profiles import BUILTINS, ProfileSettings, builtin
from tests.tuning.core import hosts
from tests.tuning.core.hosts import cluster, set_prop, set_setting

DATA, WAL = "tank/pg/data", "tank/pg/wal"
SAFE, LOSS = builtin("oltp-safe").settings, builtin("oltp-bounded-loss").settings
UNITS = {"kB": 1024, "8kB": 8192, "MB": 1024**2}
SIZES = {"kB": 1024, "MB": 1024**2, "GB": 1024**3, "K": 1024}


def by_key(p: Plan, layer: str | None = None) -> dict:
    return {(c.target, c.key) if layer is None else c.key: c for c in p.changes
            if layer is None or c.layer == layer}


def applied(facts: HostFacts, p: Plan) -> HostFacts:
    """The facts a host would report after the plan's supported changes (written by hand,
    not through project(), so the round trip checks the planner's arithmetic)."""
    after = copy.deepcopy(facts)
    for c in (c for c in p.changes if c.supported):
        if c.layer == "zfs":
            value = str(_bytes(c.desired)) if c.key == "recordsize" else c.desired
            set_prop(after, c.target, c.key, value)
        elif c.layer == "module":
            after.module_params[c.key] = c.desired
        elif c.layer == "sysctl":
            after.sysctls[c.key] = int(c.desired)
        else:
            row = next(r for r in cluster(after).settings if r.name == c.key)
            unit = UNITS.get(row.unit)
            set_setting(after, c.key, str(_bytes(c.desired) // unit) if unit else c.desired)
    return after


def _bytes(text: str) -> int:
    number = text.rstrip("kMGBK")
    return int(number) * SIZES.get(text[len(number):], 1)


# -- zfs-fuse: the real capture ----------------------------------------------------------

def test_zfs_fuse_lz4_falls_back_to_on():
    facts = set_prop(hosts.fuse(), DATA, "compression", "off")
    change = by_key(plan(facts, SAFE), "zfs")["compression"]
    assert (change.desired, change.fallback_for, change.supported) == ("on", "lz4", True)
    assert change.method == "zfs_set_new_data" and "newly written" in change.reason
    assert (DATA, "compression") not in by_key(plan(hosts.fuse(), SAFE))  # already "on"


def test_zfs_fuse_has_no_sync_property_and_no_module_parameters():
    p = plan(hosts.fuse(), LOSS)
    unsupported = {(c.target, c.key): c for c in p.unsupported}
    assert unsupported[(DATA, "sync")].reason == "zfs-fuse has no 'sync' property on this host"
    assert unsupported[("zfs", "zfs_txg_timeout")].reason == (
        "no /sys/module/zfs/parameters on this host (zfs-fuse)")
    arc = unsupported[("zfs", "zfs_arc_max")]
    assert arc.desired.isdigit() and arc.formula == SAFE.module["zfs_arc_max"]
    assert all(c in p.changes for c in p.unsupported) and not p.empty


def test_zfs_fuse_plan_details():
    facts = hosts.fuse()
    p = plan(facts, SAFE)
    zfs, pg = by_key(p, "zfs"), by_key(p, "postgres")
    assert {(c.target, c.key) for c in p.changes if c.layer == "zfs"} == {
        (DATA, "recordsize"), (WAL, "recordsize"), (WAL, "logbias")}
    assert (zfs["logbias"].current, zfs["logbias"].desired) == ("throughput", "latency")
    assert zfs["logbias"].findings == ("logbias_throughput_no_slog",)
    # shared_buffers: RAM/4 rounded down to whole MB, compared in 8kB pages
    assert pg["shared_buffers"].desired == f"{facts.mem_total // 4 // 2**20}MB"
    assert pg["shared_buffers"].current == "128MB" and pg["shared_buffers"].method == "pg_restart"
    assert pg["full_page_writes"].method == "pg_reload" and pg["wal_buffers"].desired == "16MB"
    assert p.needs_restart == ("shared_buffers", "wal_buffers")
    assert p.requires_acknowledgement == ()


def test_zfs_properties_change_online_and_the_new_data_only_ones_say_so():
    """Campoli: properties change without a remount, but recordsize and compression only
    reach data written afterwards; the plan labels exactly those two."""
    facts = set_prop(set_prop(hosts.fuse(), DATA, "compression", "off"), DATA, "atime", "on")
    zfs = [c for c in plan(facts, SAFE).changes if c.layer == "zfs"]
    assert {c.key for c in zfs} == {"recordsize", "compression", "atime", "logbias"}
    for change in zfs:
        assert change.method in ("zfs_set", "zfs_set_new_data")  # never a restart
        later = change.key in ("recordsize", "compression")
        assert (change.method == "zfs_set_new_data") is later, change.key
        assert ("newly written data only" in change.reason) is later, change.key


def test_order_is_zfs_module_sysctl_reload_restart():
    p = plan(hosts.openzfs(), LOSS)
    stages = [c.method if c.layer == "postgres" else c.layer for c in p.changes]
    assert stages == sorted(stages, key=ORDER.index)
    assert stages[0] == "zfs" and stages[-1] == "pg_restart"


def test_zfs_fuse_second_plan_has_nothing_left_it_can_do():
    facts = hosts.fuse()
    first = plan(facts, SAFE)
    second = plan(applied(facts, first), SAFE)
    assert second.empty and [c.key for c in second.changes] == ["zfs_arc_max"]


# -- OpenZFS 2.2 --------------------------------------------------------------------------

def test_openzfs_22_everything_is_supported():
    p = plan(hosts.openzfs(), LOSS, frozenset({"bounded_loss"}))
    assert p.unsupported == () and p.requires_acknowledgement == ()
    module = by_key(p, "module")
    assert module["zfs_txg_timeout"].current == "5" and module["zfs_txg_timeout"].desired == "1"
    assert "c_max" in module["zfs_arc_max"].reason  # verify: bad values are ignored silently
    assert {c.key for c in p.changes if c.layer == "zfs" and c.target == DATA} == {
        "recordsize", "logbias", "sync"}  # lz4, atime off, primarycache all already hold
    sync = by_key(p)[(DATA, "sync")]
    assert sync.risk == "high" and sync.method == "zfs_set"


def test_openzfs_22_arc_leaves_room_for_desired_shared_buffers():
    facts = hosts.openzfs()
    ram = facts.mem_total
    arc = int(by_key(plan(facts, SAFE), "module")["zfs_arc_max"].desired)
    assert arc == (ram - ram // 4 - ram // 8) // 2 // 2**20 * 2**20  # half of what is left


def test_the_arc_max_plan_says_what_its_rollback_can_restore_on_a_running_module():
    facts = hosts.openzfs()  # arcstats c_max 34359738368 (the fixture's 32 GiB)
    reason = by_key(plan(facts, SAFE), "module")["zfs_arc_max"].reason
    assert "takes effect now if OpenZFS accepts it" in reason
    assert ("rollback restores the previous effective size now (arcstats c_max just before"
            " applying, now c_max 34359738368 (32.0 GiB))") in reason
    assert "automatic sizing at the next boot" in reason
    zero = replace(SAFE, module={"zfs_arc_max": "0"})
    reason = by_key(plan(facts, zero), "module")["zfs_arc_max"].reason
    assert "a running OpenZFS ignores" in reason and "until the next boot" in reason


def test_openzfs_22_values_that_already_match_are_skipped():
    p = plan(hosts.openzfs(), SAFE)
    pg = by_key(p, "postgres")
    # fixture: full_page_writes, wal_init_zero and wal_recycle are already off
    assert not {"full_page_writes", "wal_init_zero", "wal_recycle"} & set(pg)
    assert pg["shared_buffers"].current == "16GB"  # RAM/4 wanted


def test_wal_compression_on_reads_as_the_pglz_postgresql_15_shows():
    """PostgreSQL 15 stores `on` as pglz: a plan wanting `on` is met by pglz, and
    an apply that wrote `on` reads back as done, not as a failed write."""
    facts = hosts.fuse()
    rows = cluster(facts).settings
    at = next(i for i, row in enumerate(rows) if row.name == "wal_compression")
    rows[at] = replace(rows[at], setting="pglz", vartype="enum")
    settings = ProfileSettings.from_dict({"postgres": {"wal_compression": "on"}})
    assert "wal_compression" not in by_key(plan(facts, settings), "postgres")
    rows[at] = replace(rows[at], setting="off")
    assert by_key(plan(facts, settings), "postgres")["wal_compression"].desired == "on"


def test_openzfs_22_second_plan_after_applying_is_empty():
    facts = hosts.openzfs()
    for profile in BUILTINS:
        first = plan(facts, profile.settings, frozenset({"bounded_loss"}))
        assert not first.empty
        second = plan(applied(facts, first), profile.settings)
        assert second.empty and second.changes == (), profile.slug


def test_projection_agrees_with_the_hand_written_apply():
    facts = hosts.openzfs()
    first = plan(facts, LOSS)
    assert plan(project(facts, list(first.changes)), LOSS).empty


def test_compression_chain_zstd_lz4_on():
    facts = hosts.openzfs()
    assert by_key(plan(facts, builtin("analytics").settings))[(DATA, "compression")].desired \
        == "zstd"
    caps = facts.zfs.capabilities
    facts.zfs.capabilities = replace(
        caps, compression=tuple(c for c in caps.compression if not c.startswith("zstd")))
    change = by_key(plan(set_prop(facts, DATA, "compression", "off"),
                         builtin("analytics").settings))[(DATA, "compression")]
    assert (change.desired, change.fallback_for) == ("lz4", "zstd")
    fuse = set_prop(hosts.fuse(), DATA, "compression", "off")
    change = by_key(plan(fuse, builtin("analytics").settings))[(DATA, "compression")]
    assert (change.desired, change.fallback_for) == ("on", "zstd")


def test_acknowledgement_comes_from_the_profile_and_from_the_changes():
    facts = hosts.openzfs()
    assert plan(facts, LOSS).requires_acknowledgement == ("bounded_loss",)
    custom = ProfileSettings.from_dict({"postgres": {"synchronous_commit": "off",
                                                     "fsync": "off"}})
    assert plan(facts, custom).requires_acknowledgement == ("bounded_loss", "unsafe_fsync")
    assert plan(facts, custom, frozenset({"bounded_loss"})).requires_acknowledgement == (
        "unsafe_fsync",)


def test_postgres_contexts_decide_the_method():
    facts = hosts.openzfs()
    custom = ProfileSettings.from_dict({"postgres": {
        "max_connections": "300", "work_mem": "8MB", "data_checksums": "on",
        "checkpoint_timeout": "15min", "custom.no_such_setting": "1"}})
    changes = by_key(plan(facts, custom), "postgres")
    assert changes["max_connections"].method == "pg_restart"
    assert changes["work_mem"].method == "pg_reload" and changes["work_mem"].current == "64MB"
    assert not changes["data_checksums"].supported
    assert "pg_checksums" in changes["data_checksums"].reason
    assert changes["checkpoint_timeout"].current == "300s"
    assert "has no setting custom.no_such_setting" in changes["custom.no_such_setting"].reason
    same = ProfileSettings.from_dict({"postgres": {"checkpoint_timeout": "5min",
                                                   "work_mem": "64MB"}})
    assert plan(facts, same).changes == ()


def test_full_page_writes_off_is_refused_off_zfs():
    facts = hosts.fuse()
    cluster(facts).data_dataset = cluster(facts).wal_dataset = None
    change = by_key(plan(facts, SAFE), "postgres")["full_page_writes"]
    assert not change.supported and "not on ZFS" in change.reason
    assert not [c for c in plan(facts, SAFE).changes if c.layer == "zfs"]  # no datasets


def test_formula_errors_become_unsupported_changes():
    facts = hosts.openzfs()
    facts.mem_total = None
    p = plan(facts, SAFE)
    assert by_key(p, "module")["zfs_arc_max"].reason.startswith("ram is not known")
    assert not by_key(p, "postgres")["shared_buffers"].supported


def test_sysctl_pairs_are_explained():
    change = by_key(plan(hosts.openzfs(), SAFE), "sysctl")["vm.dirty_bytes"]
    assert (change.current, change.desired) == ("0", str(2**30))
    assert "vm.dirty_ratio will read 0" in change.reason
    assert change.findings == ("dirty_limit_large",)


def test_a_host_without_zfs_or_postgres_plans_only_host_layers():
    facts = replace(hosts.fuse(), zfs=None, datasets=[], pools=[], clusters=[],
                    module_params=None)
    p = plan(facts, SAFE)
    assert {c.layer for c in p.changes} == {"module", "sysctl"}
    assert "no ZFS module" in by_key(p, "module")["zfs_arc_max"].reason
