"""The write-ups PoZoL's tuning knowledge comes from, by title and author.

Profiles and advisor findings cite these so an operator can read the evidence
behind a recommendation; the numbers quoted next to them are the sources'.
"""

NIMBUS = "Everything I've seen on optimizing Postgres on ZFS — NimbusWS blog (2021)"
PG_PHRIDAY_ZFS = "PG Phriday: Postgres on ZFS — Shaun Thomas (2ndQuadrant/EDB)"
CAMPOLI = "PostgreSQL and ZFS (talk slides) — Federico Campoli"
STAMPEDE = "PG Phriday: Steady Storage Stampede — Shaun Thomas (EDB, 2022)"
WAL_MINIMAL_PAPER = (
    "White paper: wal_level=minimal with CREATE TABLE + COPY in one transaction is 10x-300x"
    " slower — SCHARP / Fred Hutchinson Cancer Research Center (author not named)"
)
OPENZFS_WORKLOAD = "Workload Tuning → PostgreSQL — OpenZFS documentation"
OPENZFS_15526 = (
    "openzfs/zfs#15526 'some copied files are corrupted' and #15933 — OpenZFS issue tracker"
)
OPENZFS_MODULE = "zfs(4) module parameters — OpenZFS man page"
POZOL_FLEET = ("PoZoL test fleet: zfs-fuse 0.7.0 (Debian 12) with PostgreSQL 15 under pgbench,"
               " 2026 (our own measurement)")
PGTUNE = "PGTune (le0pard/pgtune) configurationSlice.js — Alexey Vasiliev"
OPENZFS_WORKLOAD_POSTGRES_RECORDSIZE = (
    "Workload Tuning → PostgreSQL — OpenZFS documentation (current): recordsize=32K on both"
    ' the data and the WAL datasets ("64K also work well, as does the 128K default"); the'
    " older 8K advice predates lz4 compression"
)
OPENZFS_HARDWARE = (
    "Hardware → Hardware RAID controllers, Power failure protection — OpenZFS documentation"
)
OPENZFS_ZPOOLCONCEPTS = "zpoolconcepts(7), zpoolprops(7) (ashift, autotrim) — OpenZFS man pages"
LINUX_BLOCK_FLUSH = (
    "Documentation/block/writeback_cache_control.rst: fsync and fdatasync both issue a cache"
    " flush (REQ_PREFLUSH) — Linux kernel"
)
PG_DOCS = "PostgreSQL documentation (runtime-config: WAL, resources, connections)"
LINUX_THP = (
    "Documentation/admin-guide/mm/transhuge.rst (enabled, defrag, shmem_enabled) — Linux kernel"
)
NIMBUS_PG_REPACK = f"{NIMBUS} § Use pg_repack"
NIMBUS_NO_PG_COMPRESSION = f"{NIMBUS} § Disable Postgres compression"
PG_REPACK = ("pg_repack documentation (requirements, disks, online VACUUM FULL) — the pg_repack"
             " project (reorg.github.io/pg_repack)")
PG_DOCS_VACUUM = ("PostgreSQL documentation (Routine Vacuuming; autovacuum_vacuum_scale_factor;"
                  " pg_stat_all_tables)")
OPENZFS_23_RELEASE = (
    "OpenZFS 2.3.0 release notes and change log (Direct IO #10018; \"arc_default_max on Linux"
    " should match FreeBSD\" #15437) — OpenZFS project"
)
OPENZFS_ZFSPROPS_DIRECT = "zfsprops(7) (direct=disabled|standard|always) — OpenZFS man page"
OPENZFS_ZPL_NOWAIT = (
    "module/os/linux/zfs/zpl_file.c (no FMODE_NOWAIT, no IOCB_NOWAIT path) — OpenZFS source"
)
PG18_AIO = ("PostgreSQL 18 documentation (runtime-config-resource: io_method, io_workers;"
            " io_uring needs a build with --with-liburing)")
PG18_CHECKSUMS = ("PostgreSQL 18 release notes and initdb documentation: data checksums on"
                  " by default (--no-data-checksums); wal_log_hints")
NIMBUS_NO_CHECKSUMS = f"{NIMBUS} § Disable postgres checksumming"
