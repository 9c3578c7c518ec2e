"""The advisor: every rule over a host's facts, now and as a profile would leave them.

Rules live in rules_storage, rules_postgres and rules_maintenance, each a
small function with a stable id. Given desired settings, the advisor also
judges the facts projected by those settings, and marks each finding
"current", "introduced" (by the profile) or "resolved" (by the profile), so a
plan shows both sides.
"""

from __future__ import annotations

from dataclasses import replace

from apps.common.sizes import KiB, parse_zfs_size
from apps.remote.facts.host import HostFacts
from apps.tuning.core import facts as r
from apps.tuning.core import rules_maintenance, rules_postgres, rules_storage, rules_versions
from apps.tuning.core.changes import Change, compute_changes, project
from apps.tuning.core.findings import SEVERITIES, Context, Finding, Rule
from apps.tuning.core.profiles import EXPERIMENT, ProfileSettings
from apps.tuning.core.winners import Winners

__all__ = ["RULES", "RELATED", "Finding", "advise", "advise_changes", "rule_ids"]

RULES: tuple[tuple[str, Rule], ...] = (
    *rules_storage.RULES, *rules_postgres.RULES, *rules_maintenance.RULES,
    *rules_versions.RULES)

# Which findings a change to (layer, key) can cause or cure: the planner links them.
RELATED: dict[tuple[str, str], tuple[str, ...]] = {
    ("zfs", "sync"): ("bounded_loss_unacknowledged",),
    ("postgres", "synchronous_commit"): ("bounded_loss_unacknowledged",),
    ("module", "zfs_txg_timeout"): ("txg_timeout_low",),
    ("zfs", "logbias"): ("logbias_throughput_no_slog",),
    ("zfs", "compression"): ("compression_off", "wal_compression_on_zfs"),
    ("zfs", "atime"): ("atime_on",),
    ("zfs", "primarycache"): ("primarycache_not_all",),
    ("zfs", "recordsize"): ("recordsize_below_8k", "recordsize_large_for_oltp",
                            "full_page_writes_off_not_zfs"),
    ("postgres", "full_page_writes"): ("full_page_writes_off_not_zfs",
                                       "full_page_writes_off_standby"),
    ("postgres", "wal_compression"): ("wal_compression_on_zfs",),
    ("module", "zfs_arc_max"): ("arc_plus_shared_buffers", "memory_overcommitted",
                                "arc_default_openzfs_23"),
    ("postgres", "io_method"): ("io_method_on_zfs",),
    ("zfs", "direct"): ("direct_io_always",),
    ("postgres", "shared_buffers"): ("arc_plus_shared_buffers", "shared_buffers_over_40pct",
                                     "wal_level_minimal_copy", "zfs_fuse_large_shared_buffers",
                                     "memory_overcommitted", "huge_pages_not_sized",
                                     "arc_default_openzfs_23"),
    ("postgres", "work_mem"): ("memory_overcommitted", "arc_default_openzfs_23"),
    ("postgres", "max_connections"): ("memory_overcommitted", "max_connections_high"),
    ("postgres", "wal_level"): ("wal_level_minimal_copy",),
    ("postgres", "max_wal_size"): ("checkpoints_requested",),
    ("sysctl", "vm.dirty_bytes"): ("dirty_limit_large", "dirty_background_missing"),
    ("sysctl", "vm.dirty_ratio"): ("dirty_limit_large", "dirty_background_missing"),
    ("sysctl", "vm.dirty_background_bytes"): ("dirty_background_missing",),
    ("sysctl", "vm.dirty_background_ratio"): ("dirty_background_missing",),
    ("sysctl", "vm.nr_hugepages"): ("huge_pages_not_sized",),
    ("sysctl", "vm.overcommit_memory"): ("memory_overcommit_default",),
    ("module", "zfs_dirty_data_max"): ("zfs_dirty_data_large",),
    ("module", "zfs_prefetch_disable"): ("prefetch_disabled",),
    ("module", "zfs_dmu_offset_next_sync"): ("zfs_corruption_bug",),
    ("module", "zfs_bclone_enabled"): ("bclone_enabled_affected",),
}


def rule_ids() -> tuple[str, ...]:
    return tuple(rule_id for rule_id, _ in RULES)


def advise(facts: HostFacts, desired: ProfileSettings | None = None,
           acknowledged: frozenset[str] = frozenset(),
           winners: Winners | None = None) -> list[Finding]:
    """Findings for the host now or, with desired settings (and what this host's
    experiments decided for the values left to them), around applying them."""
    if desired is None:
        return _run(Context(facts, frozenset(acknowledged)))
    return advise_changes(facts, compute_changes(facts, desired, winners), acknowledged,
                          large_records_intended=_large_records(facts, desired, winners))


def advise_changes(facts: HostFacts, changes: list[Change],
                   acknowledged: frozenset[str] = frozenset(), *,
                   large_records_intended: bool = False) -> list[Finding]:
    """Findings staged around applying these changes, wherever they came from (a
    profile's, or a rollback's before-values)."""
    context = Context(facts, frozenset(acknowledged), large_records_intended)
    after = _run(replace(context, facts=project(facts, changes)))
    return _staged(_run(context), after)


def _run(context: Context) -> list[Finding]:
    found = [finding for _, rule in RULES for finding in rule(context)]
    return sorted(found, key=lambda f: (SEVERITIES.index(f.severity), f.id, f.subject))


def _staged(now: list[Finding], after: list[Finding]) -> list[Finding]:
    before = {(f.id, f.subject) for f in now}
    remaining = {(f.id, f.subject) for f in after}
    staged = [replace(f, stage="current" if (f.id, f.subject) in before else "introduced")
              for f in after]
    staged += [replace(f, stage="resolved") for f in now if (f.id, f.subject) not in remaining]
    return sorted(staged, key=lambda f: (SEVERITIES.index(f.severity), f.id, f.subject))


def _large_records(facts: HostFacts, desired: ProfileSettings | None,
                   winners: Winners | None) -> bool:
    """A profile asking for >= 64K data records means large records are intended; so
    does an experiment on this host's data that large records won."""
    wanted = (desired.zfs.get("data") or {}).get("recordsize") if desired else None
    if wanted == EXPERIMENT:
        data = {name for cluster in facts.clusters for name in r.roles(facts, cluster)["data"]}
        won = [w.value for (name, key), w in (winners or {}).items()
               if name in data and key == "recordsize" and w.value]
        return any((parse_zfs_size(value) or 0) >= 64 * KiB for value in won)
    return (parse_zfs_size(wanted or "") or 0) >= 64 * KiB
