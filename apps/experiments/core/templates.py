"""Built-in experiment templates, each citing the published figure it reproduces, and the
built-in pgbench scripts they use. Pure data: services turn a template into an experiment.

Each citation names its write-up by title and author (the constants below; docs/lessons.md
and apps.tuning.core.sources cite the same write-ups).
"""

from __future__ import annotations

from dataclasses import dataclass, field

NIMBUS = "\"Everything I've seen on optimizing Postgres on ZFS\" (NimbusWS blog)"
PHRIDAY = "\"PG Phriday: Postgres on ZFS\" (Shaun Thomas, 2ndQuadrant/EDB)"
STAMPEDE = "\"PG Phriday: Steady Storage Stampede\" (Shaun Thomas, EDB, 2022)"
# The copy PoZoL's knowledge comes from names neither title nor author; say what it is
# in the words apps/tuning/core/sources.py uses for the same paper.
WHITE_PAPER = ("White paper on wal_level=minimal with CREATE TABLE + COPY (SCHARP / "
               "Fred Hutchinson Cancer Research Center, author not named)")

COPY_SCRIPT = "copy-into-new-table"


@dataclass(frozen=True)
class Template:
    slug: str
    title: str
    layer: str
    key: str
    values: tuple[str, ...]
    citation: str
    published: str  # the figure, short, for tables that print it next to ours
    primary_metric: str = "tps"
    target_role: str = ""  # "data" or "wal" for a ZFS property
    workload: dict = field(default_factory=dict)
    held: tuple[dict, ...] = ()
    script: str = ""  # a built-in script's slug
    acknowledge: str = ""  # a risk the operator must accept before it starts
    note: str = ""


# Every run forces a checkpoint at the same cadence for every value: without checkpoints
# in the run there are almost no full-page images (issue 12 measured 1.00x so).
CHECKPOINTS = {"checkpoint_every": 10}

TEMPLATES = {t.slug: t for t in (
    Template(
        "full-page-writes", "full_page_writes on/off", "postgres", "full_page_writes",
        ("on", "off"), primary_metric="wal_per_tx",
        workload={"reinit": True, **CHECKPOINTS},
        citation=f"{PHRIDAY}: \"That's nearly a 70% improvement. Due to write amplification "
                 "caused by full page writes, Postgres produced 1.2GB of WAL files during a "
                 "1-minute pgbench test, but only 160MB with full page writes disabled.\"",
        published="off: +70% TPS, 7.5x less WAL (1.2GB against 160MB a minute)",
        note="ZFS cannot tear a page (copy on write); off breaks cascading replication, "
             "backups from a standby and pg_rewind."),
    Template(
        "recordsize", "recordsize 8K/16K/32K/128K of the data dataset", "zfs", "recordsize",
        ("8K", "16K", "32K", "128K"), target_role="data",
        held=({"layer": "zfs", "key": "compression", "value": "on", "role": "data"},),
        workload={"reinit": True, **CHECKPOINTS},
        citation=f"{NIMBUS}: \"Wow, a ~20% improvement there – looks like recordsize=16k is "
                 f"the better setting\"; {PHRIDAY}: compressratio 1.71x at 8K against "
                 "7.59x at the 128K default; OpenZFS documentation: 32K for PostgreSQL "
                 "(\"64K also work well, as does the 128K default\").",
        published="16K: +20% TPS over 8K; compressratio 128K 7.59x against 8K 1.71x",
        note="Applies to newly written data only: the tables are re-initialised every run. "
             "compression is held on (lz4 on OpenZFS 2.x, lzjb on zfs-fuse) for the whole "
             "experiment so that the compression ratios compare, as in the source."),
    Template(
        "compression", "compression off/on/lz4/zstd of the data dataset", "zfs",
        "compression", ("off", "on", "lz4", "zstd"), target_role="data",
        primary_metric="compressratio", workload={"reinit": True, **CHECKPOINTS},
        citation=f"{NIMBUS}: \"In local testing I've found that 16k has the slight edge over "
                 "8k, and zstd has the slight edge over lz4\".",
        published="zstd slightly ahead of lz4",
        note="zfs-fuse has no lz4 or zstd: drop them from the values there."),
    Template(
        "dirty-bytes", "vm.dirty_bytes 1 GB against the vm.dirty_ratio default", "sysctl",
        "vm.dirty_bytes", ("vm.dirty_ratio=20", "1073741824"),
        primary_metric="drain_seconds", workload={"reinit": True, **CHECKPOINTS},
        citation=f"{STAMPEDE}: \"Perhaps most importantly, a 1GB buffer only required 30 "
                 "seconds to drain after the test ended.\"",
        published="1GB dirty_bytes: 30 s to drain after the run; TPS collapses when Dirty "
                  "reaches vm.dirty_ratio",
        note="A sysctl is the kernel's: every host sharing the kernel sees it while the "
             "experiment runs. ZFS file data does not show in Dirty."),
    Template(
        "txg-timeout", "zfs_txg_timeout 5/1 with sync=disabled", "module", "zfs_txg_timeout",
        ("5", "1"), held=({"layer": "zfs", "key": "sync", "value": "disabled",
                           "role": "data"},),
        workload={"reinit": True, **CHECKPOINTS},
        acknowledge="sync=disabled on the data dataset for the whole experiment: a crash "
                    "loses up to a transaction group of committed transactions",
        citation=f"{NIMBUS}: with zfs_txg_timeout=1, sync=disabled \"About a ~12% "
                 "improvement!\"",
        published="txg_timeout 1 + sync=disabled: +12% TPS",
        note="Needs /sys/module/zfs/parameters (OpenZFS); zfs-fuse has none."),
    Template(
        "wal-level-copy", "wal_level minimal/replica with CREATE TABLE + COPY", "postgres",
        "wal_level", ("replica", "minimal"), script=COPY_SCRIPT,
        held=({"layer": "postgres", "key": "max_wal_senders", "value": "0"},),
        workload={"clients": 1, "threads": 1, "reinit": False, "checkpoint_every": 0},
        citation=f"{WHITE_PAPER}: \"using minimal WAL files together with the CREATE TABLE "
                 "and COPY commands inside a transaction causes a 10x to 300x slowdown\" "
                 "(7:38:23 minimal against 0:43:54 replica with shared_buffers 50G).",
        published="minimal: 10x-300x slower COPY into a table created in the transaction",
        note="The slowdown grows with shared_buffers (FlushRelationBuffers scans them all); "
             "wal_level needs a restart, done around every run."),
    Template(
        "wal-sync-method", "wal_sync_method fsync/fdatasync/open_datasync", "postgres",
        "wal_sync_method", ("fsync", "fdatasync", "open_datasync"), script=COPY_SCRIPT,
        workload={"clients": 1, "threads": 1, "reinit": False, "checkpoint_every": 0},
        citation=f"{WHITE_PAPER}: 50,000-row test script, fsync 0:09.27, fdatasync 0:15.75, "
                 "open_datasync 0:15.16.",
        published="fsync fastest: 9.27 s against 15.75 s (fdatasync), 15.16 s (open_datasync)"),
)}


@dataclass(frozen=True)
class BuiltinScript:
    slug: str
    name: str
    description: str
    text: str
    setup: str


# The white paper's case: a table created and filled by COPY in one transaction. The
# source file is written by the setup (an absolute path is required to write; reading a
# path relative to the data directory is allowed); one client, since the name is shared.
SCRIPTS: dict[str, BuiltinScript] = {s.slug: s for s in (
    BuiltinScript(
        COPY_SCRIPT, "CREATE TABLE + COPY in one transaction",
        "The white paper's case: BEGIN; CREATE TABLE; COPY 1,000 rows; COMMIT. Run with one "
        "client.",
        text="DROP TABLE IF EXISTS pozol_copy;\n"
             "BEGIN;\n"
             "CREATE TABLE pozol_copy (id integer, payload text);\n"
             "COPY pozol_copy FROM 'pozol-copy-source.csv' WITH (FORMAT csv);\n"
             "COMMIT;\n",
        setup="COPY (SELECT g, md5(g::text) FROM generate_series(1, 1000) AS g) "
              "TO :'copy_file' WITH (FORMAT csv);\n"),
)}
