"""Typed facts for tuning tests, built from the remote fixtures and edited per test.

zfs-fuse: the real captured facts.json, read back by HostFacts.from_dict as
the control plane reads Host.facts. OpenZFS 2.2: discover() run against the
openzfs-2.2 fixture host (a strict fake shell), with the pg_settings rows a real
PostgreSQL 16 has but the fixture's short psql output lacks. 2.1 and 2.3 hosts
are the 2.2 host with its module version (and what changes with it) edited.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from functools import cache
from pathlib import Path

from apps.remote import gather
from apps.remote.commands import Command, cmd
from apps.remote.facts import bloat, postgres, zfs
from apps.remote.facts.host import Cluster, HostFacts, ZfsFacts
from apps.remote.facts.postgres import Setting
from apps.remote.facts.zfs import PropertyValue
from tests.remote.fakeshell import FakeShell
from tests.remote.fixtures.hosts import ZFS_FUSE, FixtureHost

GiB = 1024**3

# name, setting, unit, context, vartype: as PostgreSQL 16 reports them by default.
PG16_ROWS = (
    ("effective_cache_size", "524288", "8kB", "user", "integer"),
    ("maintenance_work_mem", "65536", "kB", "user", "integer"),
    ("wal_buffers", "2048", "8kB", "postmaster", "integer"),
    ("synchronous_commit", "on", None, "user", "enum"),
    ("fsync", "on", None, "sighup", "bool"),
    ("wal_level", "replica", None, "postmaster", "enum"),
    ("random_page_cost", "4", None, "user", "real"),
    ("default_statistics_target", "100", None, "user", "integer"),
    ("max_worker_processes", "8", None, "postmaster", "integer"),
    ("max_parallel_workers", "8", None, "user", "integer"),
    ("max_parallel_workers_per_gather", "2", None, "user", "integer"),
    ("min_wal_size", "80", "MB", "sighup", "integer"),
    ("max_wal_size", "1024", "MB", "sighup", "integer"),
    ("checkpoint_timeout", "300", "s", "sighup", "integer"),
)


def fuse() -> HostFacts:
    """The real zfs-fuse capture: PG 15, data tank/pg/data, WAL tank/pg/wal, no module params."""
    return HostFacts.from_dict(json.loads((ZFS_FUSE / "facts.json").read_text()))


def openzfs(version: str = "2.2.4") -> HostFacts:
    """The OpenZFS 2.2 fixture host (PG 16, NVMe, SLOG), its kernel module set to version."""
    facts = copy.deepcopy(_discovered_22())
    facts.zfs.version = facts.zfs.kernel_version = f"{version}-1"
    params = facts.module_params
    if version < "2.2.1":
        params.pop("zfs_bclone_enabled")  # the tunable arrived in 2.2.1
    if version >= "2.3":
        params["zfs_bclone_enabled"] = "1"  # 2.3 enables block cloning by default
    return facts


@cache
def _discovered_22() -> HostFacts:
    facts = gather.discover(_openzfs_22_shell())
    for cluster in facts.clusters:
        known = {row.name for row in cluster.settings}
        cluster.settings += [_row(*row) for row in PG16_ROWS if row[0] not in known]
    return facts


def _row(name: str, setting: str, unit: str | None, context: str, vartype: str) -> Setting:
    return Setting(name, setting, unit, context, vartype, source="default", boot_val=setting,
                   pending_restart=False)


def _openzfs_22_shell() -> FakeShell:
    """The same scripted host tests/remote/test_gather.py drives."""
    host = FixtureHost("openzfs-2.2")
    postmaster = [postgres.Process(1500, 1, "postgres", "/usr/lib/postgresql/16/bin/postgres")]
    nvme = {f"nvme:{d}": cmd("nvme", "get-feature", "-f", "6", f"/dev/{d}")
            for d in ("nvme0n1", "nvme1n1", "nvme2n1")}
    def psql(sql: str, database: str = "postgres") -> Command:
        return cmd("sh", "-c", 'cd / && exec "$@"', "sh", "timeout", 30, "runuser", "-u",
                   "postgres", "--", "/usr/lib/postgresql/16/bin/psql", "-h",
                   "/var/run/postgresql", "-p", 5432, "-X", "-At", "-F", "\t", "-v",
                   "ON_ERROR_STOP=1", "-d", database, "-c", sql)

    version = zfs.ZfsVersion("2.2.4-1", "2.2.4-1")
    zfs_facts = ZfsFacts("OpenZFS", zfs.OPENZFS, "2.2.4-1", "2.2.4-1", "2.2.4-1",
                         zfs.baseline_capabilities(zfs.OPENZFS, version))
    shell = FakeShell()
    host.script(shell, gather.host_probes())
    host.script(shell, {**gather.zfs_probes(), **nvme,
                        **gather.postmaster_probes(postmaster)})
    data = gather.zfs_data_probes(zfs_facts, ["tank"])
    host.script(shell, {**data, "psql:1500": psql(postgres.SETTINGS_QUERY),
                        "psql:1500:stats": psql(postgres.stats_query(16)),
                        "psql:1500:databases": psql(bloat.LISTING_QUERY)})
    return host.script(shell, {"psql:1500:db:app": psql(bloat.TABLES_QUERY, "app")})


# -- edits ---------------------------------------------------------------------------------

def cluster(facts: HostFacts) -> Cluster:
    return facts.clusters[0]


def set_prop(facts: HostFacts, dataset: str, prop: str, value: str) -> HostFacts:
    target = next(d for d in facts.datasets if d.name == dataset)
    target.properties[prop] = PropertyValue(value, "local")
    return facts


def set_setting(facts: HostFacts, name: str, value: str) -> HostFacts:
    rows = cluster(facts).settings
    at = next(i for i, row in enumerate(rows) if row.name == name)
    rows[at] = replace(rows[at], setting=value)
    return facts


PG18 = Path(__file__).parent / "fixtures" / "pg18"


def pg18(facts: HostFacts, capture: str = "settings_initdb_default.txt") -> HostFacts:
    """The cluster's settings replaced by a real PostgreSQL 18.4's (fixtures/pg18), read
    as discovery reads them: rows, server_version_num, data_checksums."""
    target = cluster(facts)
    target.settings = postgres.parse_settings((PG18 / capture).read_text())
    version_num = postgres.setting_value(target.settings, "server_version_num")
    target.server_version_num = int(version_num) if version_num else None
    target.version = (PG18 / "PG_VERSION.txt").read_text().strip()  # as discovery reads it
    target.data_checksums = postgres.setting_value(target.settings, "data_checksums") == "on"
    return facts
