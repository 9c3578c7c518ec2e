"""Advisor rules about ZFS datasets, pools, module versions and disks."""

from __future__ import annotations

from datetime import datetime, timedelta

from apps.common.sizes import KiB, parse_zfs_size
from apps.remote import snapshot_plan
from apps.remote.facts.host import Dataset, Disk, Pool
from apps.tuning.core import facts as r
from apps.tuning.core import sources as src
from apps.tuning.core.findings import Context, Finding, Rule


def bounded_loss_unacknowledged(ctx: Context) -> list[Finding]:
    if "bounded_loss" in ctx.acknowledged:
        return []
    found = [Finding(
        "bounded_loss_unacknowledged", "critical", f"sync=disabled on {d.name}",
        f"{d.name} ({role} of {c.data_dir}): sync=disabled",
        "ZFS acknowledges fsync before the data is on disk: a crash loses up to about one"
        " second of committed transactions (one txg interval, more under heavy writes). The"
        " cluster stays consistent, but committed work is gone.",
        "Set sync=standard, or record the operator's acknowledgement of 'bounded_loss'.",
        src.NIMBUS, subject=d.name,
    ) for c, role, d in ctx.pg_datasets() if r.prop(d, "sync") == "disabled"]
    found += [Finding(
        "bounded_loss_unacknowledged", "critical",
        f"synchronous_commit=off on {c.data_dir}", "synchronous_commit=off",
        "COMMIT returns before its WAL is flushed: a crash loses the last commits (up to"
        " three times wal_writer_delay), without corrupting the cluster.",
        "Set synchronous_commit=on, or record the acknowledgement of 'bounded_loss'.",
        src.NIMBUS, subject=c.data_dir,
    ) for c in ctx.clusters() if r.setting_value(c, "synchronous_commit") == "off"]
    return found


def txg_timeout_low(ctx: Context) -> list[Finding]:
    value = r.module_param(ctx.facts, "zfs_txg_timeout")
    if value is None or not value.isdigit() or int(value) >= 5:
        return []
    acknowledged = "bounded_loss" in ctx.acknowledged
    kind = r.disk_kind(ctx.facts, (ctx.facts.clusters or [None])[0])
    slow = kind != "nvme"
    return [Finding(
        "txg_timeout_low", "info" if acknowledged and not slow else "warning",
        f"zfs_txg_timeout={value} (default 5)",
        f"module parameter zfs_txg_timeout={value}; {kind} storage",
        "Shorter transaction groups bound what sync=disabled can lose, at the price of more,"
        " smaller writes for every pool on the host (measured on NVMe: +12% TPS with"
        " sync=disabled)." + (f" On {kind} storage a transaction group every second costs"
                              " more than it saves: syncs pile up and throughput drops."
                              if slow else ""),
        "Keep it only together with an acknowledged bounded-loss profile on NVMe; otherwise 5.",
        src.NIMBUS,
    )]


def logbias_throughput_no_slog(ctx: Context) -> list[Finding]:
    pools = r.pools(ctx.facts)
    return [Finding(
        "logbias_throughput_no_slog", "warning", f"logbias=throughput on {d.name}",
        f"{d.name}: logbias=throughput; pool {r.pool_of(d.name)} has no log device",
        "Without a SLOG, throughput logbias writes small synchronous blocks straight into"
        " the pool: the 'most horrific fragmentation imaginable', paid again on every read.",
        f"zfs set logbias=latency {d.name}",
        src.NIMBUS, subject=d.name,
    ) for d in ctx.facts.datasets
        if r.prop(d, "logbias") == "throughput"
        and r.prop_source(d, "logbias") != "inherited"
        and not _has_log(pools.get(r.pool_of(d.name)))]


def _has_log(pool: Pool | None) -> bool:
    return pool is not None and pool.has_log


def dedup_on(ctx: Context) -> list[Finding]:
    pg = {d.name for _, _, d in ctx.pg_datasets()}
    return [Finding(
        "dedup_on", "warning", f"dedup on {d.name}", f"{d.name}: dedup={r.prop(d, 'dedup')}",
        "Deduplication tables cost a lot of memory and every write pays a lookup; database"
        " pages are rarely identical, so nothing is saved.",
        f"zfs set dedup=off {d.name} (existing blocks stay deduplicated until rewritten)",
        src.PG_PHRIDAY_ZFS, subject=d.name,
    ) for d in ctx.facts.datasets
        if (r.prop(d, "dedup") or "off") != "off"
        and (d.name in pg or r.prop_source(d, "dedup") != "inherited")]


def compression_off(ctx: Context) -> list[Finding]:
    return [Finding(
        "compression_off", "warning", f"compression off on {d.name}",
        f"{d.name} ({role} of {c.data_dir}): compression=off",
        "lz4 is nearly free in CPU and database pages compress well (1.7x at 8K records,"
        " 7.6x at 128K in a published test): less to write, more in the ARC.",
        f"zfs set compression=lz4 {d.name} (newly written data only)",
        src.PG_PHRIDAY_ZFS, subject=d.name,
    ) for c, role, d in ctx.pg_datasets() if r.prop(d, "compression") == "off"]


def atime_on(ctx: Context) -> list[Finding]:
    return [Finding(
        "atime_on", "warning", f"atime on on {d.name}",
        f"{d.name} ({role} of {c.data_dir}): atime=on",
        "Every read of a relation file becomes a metadata write as well.",
        f"zfs set atime=off {d.name}", src.PG_PHRIDAY_ZFS, subject=d.name,
    ) for c, role, d in ctx.pg_datasets() if r.prop(d, "atime") == "on"]


RECORDSIZE_ADVICE = (
    "Current OpenZFS documentation recommends recordsize=32K on both the data and the WAL"
    ' datasets ("64K also work well, as does the 128K default") and notes that the older 8K'
    " advice predates lz4; NimbusWS measured 16K at about +20% TPS over 8K (1689 vs 1366)."
    " Both are reasonable: measure on this host."
)
LARGE_RECORDS_FOR_OLTP = 128 * KiB  # upstream calls up to the 128K default fine for PostgreSQL


def recordsize_below_8k(ctx: Context) -> list[Finding]:
    return [Finding(
        "recordsize_below_8k", "warning", f"recordsize below 8K on {d.name}",
        f"{d.name}: recordsize={r.prop(d, 'recordsize')}",
        "A PostgreSQL page is 8K: smaller records split every page, and full_page_writes=off"
        " is only safe when a page cannot be split. " + RECORDSIZE_ADVICE,
        f"zfs set recordsize=16K {d.name} (or 32K; newly written data only)",
        f"{src.OPENZFS_WORKLOAD_POSTGRES_RECORDSIZE}; {src.NIMBUS}", subject=d.name,
    ) for _, _, d in ctx.pg_datasets() if (_recordsize(d) or 8 * KiB) < 8 * KiB]


def recordsize_large_for_oltp(ctx: Context) -> list[Finding]:
    """Informational, and only above 128K: upstream calls 32K-128K fine for PostgreSQL."""
    return [Finding(
        "recordsize_large_for_oltp", "info", f"recordsize {r.prop(d, 'recordsize')} on OLTP data",
        f"{d.name} (data of {c.data_dir}): recordsize={r.prop(d, 'recordsize')}",
        "Records above 128K turn every random 8K page write into a read-modify-write of the"
        " whole record. " + RECORDSIZE_ADVICE + " 128K records compress 7.6x against 1.7x at"
        " 8K, which favours analytics.",
        f"For OLTP: zfs set recordsize=32K {d.name} (or the 16K we measured, or what a"
        " recordsize experiment on this host found: a profile's recordsize \"experiment\""
        " takes its winner); keep it for analytics.",
        f"{src.OPENZFS_WORKLOAD_POSTGRES_RECORDSIZE}; {src.NIMBUS}; {src.PG_PHRIDAY_ZFS}",
        subject=d.name,
    ) for c, role, d in ctx.pg_datasets()
        if role == "data" and (_recordsize(d) or 0) > LARGE_RECORDS_FOR_OLTP
        and not ctx.large_records_intended]


def primarycache_not_all(ctx: Context) -> list[Finding]:
    return [Finding(
        "primarycache_not_all", "warning", f"primarycache={value} on {d.name}",
        f"{d.name} ({role} of {c.data_dir}): primarycache={value}",
        "PostgreSQL relies on the file cache (the ARC on ZFS) behind its own shared_buffers:"
        " without cached data every miss in shared_buffers becomes a disk read, and ZFS"
        " prefetch and compressed caching are lost. The old primarycache=metadata advice was"
        " withdrawn from the OpenZFS PostgreSQL guide (it stays for InnoDB, which caches"
        " everything itself).",
        f"zfs set primarycache=all {d.name}; size the ARC with zfs_arc_max instead.",
        f"{src.OPENZFS_WORKLOAD}; {src.NIMBUS}", subject=d.name,
    ) for c, role, d in ctx.pg_datasets()
        if (value := r.prop(d, "primarycache")) in ("metadata", "none")]


def _recordsize(dataset: Dataset) -> int | None:
    value = r.prop(dataset, "recordsize")
    return parse_zfs_size(value) if value else None


def data_wal_same_dataset(ctx: Context) -> list[Finding]:
    return [Finding(
        "data_wal_same_dataset", "info", f"WAL inside the data dataset of {c.data_dir}",
        f"data and WAL both on {c.data_dataset}",
        "One dataset means one set of properties and snapshots: WAL cannot get its own"
        " recordsize, logbias or snapshot schedule.",
        "Move pg_wal to its own dataset (initdb --waldir, or a symlink on a stopped cluster).",
        src.OPENZFS_WORKLOAD, subject=c.data_dir,
    ) for c in ctx.facts.clusters
        if c.data_dataset and c.wal_dataset in (None, c.data_dataset)]


def data_wal_different_pools(ctx: Context) -> list[Finding]:
    """Warns where the snapshot engine cannot take data and WAL in one atomic command:
    the same decision (apps.remote.snapshot_plan) it takes, so the two never disagree."""
    caps = r.capabilities(ctx.facts)
    multi = bool(caps and caps.multi_snapshot)  # not known: the engine assumes it cannot
    names = [d.name for d in ctx.facts.datasets]
    found = []
    for c in ctx.facts.clusters:
        data, wal = c.data_dataset, c.wal_dataset
        if not data or not wal or data == wal:
            continue
        chosen = snapshot_plan.for_cluster(data, wal, names, multi_snapshot=multi)
        if chosen.method != snapshot_plan.BACKUP:
            continue
        found.append(Finding(
            "data_wal_different_pools", "warning", f"no atomic snapshot of {c.data_dir}",
            f"data on {data}, WAL on {wal}",
            f"No one command snapshots data and WAL at one instant: {chosen.reason}. A"
            " restore from them needs the backup_label PoZoL logs with the snapshot.",
            "Keep data and WAL alone under one parent dataset in one pool (snapshotted with"
            " one `zfs snapshot -r`), or on a ZFS that snapshots several datasets in one"
            " command.", src.PG_PHRIDAY_ZFS, subject=c.data_dir))
    return found


# Versions hit by openzfs/zfs#15526 (zeroed chunks after sparse copies): the
# offset_next_sync default arrived in 2.1.4; the race was fixed in 2.1.14 and 2.2.2,
# its follow-up in the dirty-dnode check (#15933) only in 2.1.15 and 2.2.4: the window
# runs to the follow-up, as the message says.
FIXED_IN = ((2, 1, 15), (2, 2, 4))


def _corruption_window(version: tuple[int, int, int]) -> bool:
    return (2, 1, 4) <= version < FIXED_IN[0] or (2, 2, 0) <= version < FIXED_IN[1]


def zfs_corruption_bug(ctx: Context) -> list[Finding]:
    version = r.zfs_version(ctx.facts)
    if version is None or not _corruption_window(version):
        return []
    workaround = r.module_param(ctx.facts, "zfs_dmu_offset_next_sync") == "0"
    return [Finding(
        "zfs_corruption_bug", "warning" if workaround else "critical",
        f"OpenZFS {'.'.join(map(str, version))} can silently zero copied data",
        f"kernel module {'.'.join(map(str, version))}; zfs_dmu_offset_next_sync="
        f"{r.module_param(ctx.facts, 'zfs_dmu_offset_next_sync')}",
        "A race in the dirty-dnode check behind lseek(SEEK_DATA/SEEK_HOLE) made sparse copies"
        " read zeros (#15526); fixed in 2.1.14 and 2.2.2, and the follow-up (#15933) in"
        " 2.1.15 and 2.2.4.",
        "Upgrade to 2.2.4 or later (2.1.15 or later on 2.1)" + (
            "" if workaround else "; until then write 0 to zfs_dmu_offset_next_sync"),
        f"{src.OPENZFS_15526}; {src.CAMPOLI}",
    )]


def bclone_enabled_affected(ctx: Context) -> list[Finding]:
    version = r.zfs_version(ctx.facts)
    if version is None or not (2, 2, 0) <= version < (2, 2, 4) \
            or r.module_param(ctx.facts, "zfs_bclone_enabled") != "1":
        return []
    # A pool whose block_cloning feature is disabled clones nothing; one whose state
    # discovery could not read may.
    pools = [p.name for p in ctx.facts.pools if p.block_cloning != "disabled"]
    if not pools:
        return []
    return [Finding(
        "bclone_enabled_affected", "critical", "block cloning enabled on an affected OpenZFS",
        f"kernel module {'.'.join(map(str, version))}; zfs_bclone_enabled=1; "
        f"feature@block_cloning not disabled on {', '.join(pools)}",
        "Block cloning before 2.2.4 corrupted copied files (#15933: mmap flushing with"
        " cloning); 2.2.x turned it off by default for that reason.",
        "Write 0 to zfs_bclone_enabled and upgrade to 2.2.4 or later.", src.OPENZFS_15526,
    )]


def slog_power_loss(ctx: Context) -> list[Finding]:
    return [Finding(
        "slog_power_loss", "info", f"pool {p.name} has a separate log device",
        f"{p.name}: log vdevs {', '.join(v.name for v in p.logs) or 'present'}",
        "Synchronous commits are acknowledged once on the SLOG: if it loses its cache on"
        " power failure, committed transactions go with it.",
        "Use SSDs with power-loss protection (capacitors), mirrored, for log devices.",
        src.PG_PHRIDAY_ZFS, subject=p.name,
    ) for p in ctx.facts.pools if p.has_log]


def volatile_write_cache_sync_method(ctx: Context) -> list[Finding]:
    """Drives whose write cache is volatile: safe only if they honour flushes (or have PLP).

    The id is kept from when this rule blamed wal_sync_method: plans and the UI refer
    to it. The method does not matter: Linux sends a cache flush for fdatasync as for
    fsync, and ZFS flushes the disks at every ZIL commit and txg sync anyway.
    """
    risky = [d for d in r.physical_disks(ctx.facts) if _volatile(d)]
    if not risky or not ctx.facts.clusters:
        return []
    names = ", ".join(d.name for d in risky)
    nvme = [d.name for d in risky if d.transport == "nvme"]
    disable = "; ".join(f"nvme set-feature -f 6 -v 0 /dev/{n}" for n in nvme) or \
        "hdparm -W 0 on each drive"
    return [Finding(
        "volatile_write_cache_sync_method", "warning",
        "drives with a volatile write cache and no known power-loss protection",
        f"volatile write cache on {names}",
        "Durability then rests on every drive honouring cache flushes: Linux sends one for"
        " fdatasync as for fsync (so wal_sync_method makes no difference) and ZFS flushes at"
        " each ZIL commit and txg sync. A drive without power-loss protection that"
        " acknowledges a flush from its cache loses it on power failure: consumer NVMe"
        " drives corrupted a cluster this way under pgbench.",
        "Use drives with power-loss protection (capacitors: most datacenter SSDs) for data,"
        f" WAL and SLOG; otherwise turn the volatile cache off ({disable}) and measure the cost.",
        f"{src.NIMBUS}; {src.LINUX_BLOCK_FLUSH}; {src.OPENZFS_HARDWARE}",
    )]


def _volatile(disk: Disk) -> bool:
    """The controller's own answer wins; the kernel's view counts only for SSDs without one."""
    if disk.volatile_write_cache is not None:
        return disk.volatile_write_cache
    return disk.write_cache == "write back" and disk.rotational is False


def _pg_pools(ctx: Context) -> list[Pool]:
    """The pools holding a cluster's data or WAL, each once, in facts order."""
    names = {r.pool_of(d.name) for _, _, d in ctx.pg_datasets()}
    return [p for p in ctx.facts.pools if p.name in names]


def database_at_pool_root(ctx: Context) -> list[Finding]:
    return [Finding(
        "database_at_pool_root", "warning", f"{c.data_dir} lives in the pool root {name}",
        f"data directory {c.data_dir} on dataset {name} (the pool's root dataset)",
        "Properties, snapshots, rollbacks and send/receive work per dataset: at the root the"
        " database shares them with everything else in the pool, and a rollback or a"
        " recordsize change for PostgreSQL hits every other file too.",
        f"Create a dataset for the cluster (zfs create {name}/pg/data, with pg_wal in"
        f" {name}/pg/wal) and move the data there with the cluster stopped.",
        f"{src.OPENZFS_WORKLOAD}; {src.PG_PHRIDAY_ZFS}", subject=c.data_dir,
    ) for c in ctx.facts.clusters if (name := c.data_dataset) and "/" not in name]


def ashift_below_12(ctx: Context) -> list[Finding]:
    kind = r.disk_kind(ctx.facts, (ctx.facts.clusters or [None])[0])
    if kind == "hdd":
        return []  # old 512-byte drives exist; sector sizes are not in facts
    return [Finding(
        "ashift_below_12", "warning", f"ashift={p.ashift} on {p.name} ({kind} storage)",
        f"pool {p.name}: ashift={p.ashift} ({2 ** p.ashift}-byte blocks) on {kind} devices",
        "SSDs and 4K-sector drives write at least 4K internally: smaller ZFS blocks become"
        " read-modify-writes inside the drive, with write amplification and lost"
        " throughput. ashift is fixed per vdev when it is created.",
        "Recreate the pool (or add new vdevs) with -o ashift=12 (13 for some SSDs), then"
        " zfs send/receive the data across.",
        src.OPENZFS_ZPOOLCONCEPTS, subject=p.name,
    ) for p in _pg_pools(ctx) if p.ashift is not None and p.ashift < 12]


def pool_no_redundancy(ctx: Context) -> list[Finding]:
    return [Finding(
        "pool_no_redundancy", "warning", f"pool {p.name} has no redundancy",
        f"pool {p.name}: top-level vdevs {', '.join(single)} are single devices",
        "ZFS detects corruption by checksum on every read, but repairs it only from a good"
        " copy: without a mirror or raidz a bad block is an I/O error (and a lost table"
        " page), and one failed device loses the pool.",
        f"zpool attach {p.name} <device> <new-device> to turn each single device into a"
        " mirror; keep backups either way.",
        f"{src.PG_PHRIDAY_ZFS}; {src.OPENZFS_ZPOOLCONCEPTS}", subject=p.name,
    ) for p in _pg_pools(ctx)
        if (single := [v.name for v in p.vdevs if v.kind in ("disk", "file")])]


SCRUB_INTERVAL_DAYS = 35  # a monthly scrub, with a few days' grace


def scrub_overdue(ctx: Context) -> list[Finding]:
    found = []
    for p in _pg_pools(ctx):
        last = datetime.fromisoformat(p.last_scrub) if p.last_scrub else None
        if last is not None and ctx.now - last <= timedelta(days=SCRUB_INTERVAL_DAYS):
            continue
        found.append(Finding(
            "scrub_overdue", "warning", f"pool {p.name} not scrubbed in {SCRUB_INTERVAL_DAYS}"
            " days",
            f"pool {p.name}: last completed scrub "
            + (f"ended {last:%Y-%m-%d %H:%M}" if last else "not shown by zpool status"),
            "A scrub reads every block and repairs silent corruption from redundancy while a"
            " good copy still exists; blocks PostgreSQL rarely reads (old partitions, indexes"
            " of cold tables) are otherwise never checked until they are needed.",
            f"zpool scrub {p.name}, and schedule it monthly (e.g. the zfsutils scrub timer"
            " or a cron entry).",
            f"{src.OPENZFS_ZPOOLCONCEPTS}; {src.CAMPOLI}", subject=p.name))
    return found


def slog_suggested_hdd(ctx: Context) -> list[Finding]:
    if r.disk_kind(ctx.facts, (ctx.facts.clusters or [None])[0]) != "hdd":
        return []
    return [Finding(
        "slog_suggested_hdd", "info", f"pool {p.name} on hard disks has no SLOG",
        f"pool {p.name}: rotating disks, no log vdev",
        "Every COMMIT waits for a ZIL write; on hard disks that is a seek each time. A small"
        " fast SSD as a separate log (SLOG) takes those synchronous writes.",
        f"zpool add {p.name} log mirror <ssd1> <ssd2> (SSDs with power-loss protection;"
        " a few GB is enough).",
        src.PG_PHRIDAY_ZFS, subject=p.name,
    ) for p in _pg_pools(ctx) if not p.has_log]


def slog_not_mirrored(ctx: Context) -> list[Finding]:
    return [Finding(
        "slog_not_mirrored", "warning", f"pool {p.name} has a log device that is not mirrored",
        f"pool {p.name}: log vdev {v.name} is a single {v.kind}",
        "If the only log device dies together with a crash or power loss, the synchronous"
        " writes it held (committed transactions) are gone.",
        f"zpool attach {p.name} {v.name} <second-ssd>",
        f"{src.PG_PHRIDAY_ZFS}; {src.OPENZFS_HARDWARE}", subject=p.name,
    ) for p in _pg_pools(ctx) for v in p.logs if v.kind in ("disk", "file")]


def l2arc_considerations(ctx: Context) -> list[Finding]:
    return [Finding(
        "l2arc_considerations", "info", f"pool {p.name} has an L2ARC cache device",
        f"pool {p.name}: cache {', '.join(v.name for v in p.cache)}",
        "An L2ARC helps only when the working set exceeds RAM and the cache device is much"
        " faster than the pool (SSD in front of hard disks); its headers take ARC memory, it"
        " starts cold after a reboot unless persistent (2.0+), and on an all-flash pool it"
        " mostly adds writes.",
        "Keep it on hybrid (HDD + SSD) pools whose hot data outgrows the ARC; otherwise"
        f" zpool remove {p.name} <cache-device>.",
        src.PG_PHRIDAY_ZFS, subject=p.name,
    ) for p in _pg_pools(ctx) if p.has_cache]


def autotrim_off_ssd(ctx: Context) -> list[Finding]:
    kind = r.disk_kind(ctx.facts, (ctx.facts.clusters or [None])[0])
    if kind == "hdd":
        return []
    return [Finding(
        "autotrim_off_ssd", "info", f"autotrim off on {kind} pool {p.name}",
        f"pool {p.name}: autotrim=off on {kind} devices",
        "Without TRIM the SSD does not learn which blocks ZFS freed: copy-on-write frees"
        " blocks all the time, so the drive's free pool shrinks and sustained writes slow"
        " down as it garbage-collects.",
        f"zpool set autotrim=on {p.name} (or a periodic `zpool trim {p.name}`).",
        src.OPENZFS_ZPOOLCONCEPTS, subject=p.name,
    ) for p in _pg_pools(ctx) if p.autotrim == "off"]


# Models that name a RAID controller's logical drive rather than a disk.
RAID_MODELS = ("PERC", "MegaRAID", "MR9", "LOGICAL VOLUME", "Smart Array", "ServeRAID",
               "RAID")


def raid_controller_below_zfs(ctx: Context) -> list[Finding]:
    raided = [d for d in r.physical_disks(ctx.facts)
              if any(marker in (d.model or "") for marker in RAID_MODELS)]
    if not raided or not ctx.facts.pools:
        return []
    return [Finding(
        "raid_controller_below_zfs", "warning", "disks behind a hardware RAID controller",
        "; ".join(f"{d.name}: model {d.model}" for d in raided),
        "A RAID controller's logical drive hides the disks from ZFS: ZFS cannot repair from"
        " redundancy it does not see, the controller's cache may reorder or lose flushes, and"
        " a single-disk RAID 0 is not a whole disk.",
        "Put the controller in HBA/IT (pass-through) mode and give ZFS the disks themselves.",
        f"{src.OPENZFS_HARDWARE}; {src.PG_PHRIDAY_ZFS}",
    )]


def prefetch_disabled(ctx: Context) -> list[Finding]:
    if r.module_param(ctx.facts, "zfs_prefetch_disable") != "1":
        return []
    return [Finding(
        "prefetch_disabled", "info", "ZFS prefetch is disabled (zfs_prefetch_disable=1)",
        "module parameter zfs_prefetch_disable=1",
        "Turning prefetch off saves reads a random-I/O OLTP load never uses, but every"
        " sequential scan, VACUUM, backup and analytics query on the host loses read-ahead.",
        "Keep it only for pure random-I/O OLTP hosts, measured; otherwise write 0 to it.",
        f"{src.NIMBUS}; {src.OPENZFS_MODULE}",
    )]


RULES: tuple[tuple[str, Rule], ...] = (
    ("bounded_loss_unacknowledged", bounded_loss_unacknowledged),
    ("txg_timeout_low", txg_timeout_low),
    ("logbias_throughput_no_slog", logbias_throughput_no_slog),
    ("dedup_on", dedup_on),
    ("compression_off", compression_off),
    ("atime_on", atime_on),
    ("recordsize_below_8k", recordsize_below_8k),
    ("recordsize_large_for_oltp", recordsize_large_for_oltp),
    ("data_wal_same_dataset", data_wal_same_dataset),
    ("data_wal_different_pools", data_wal_different_pools),
    ("zfs_corruption_bug", zfs_corruption_bug),
    ("bclone_enabled_affected", bclone_enabled_affected),
    ("slog_power_loss", slog_power_loss),
    ("volatile_write_cache_sync_method", volatile_write_cache_sync_method),
    ("primarycache_not_all", primarycache_not_all),
    ("database_at_pool_root", database_at_pool_root),
    ("ashift_below_12", ashift_below_12),
    ("pool_no_redundancy", pool_no_redundancy),
    ("scrub_overdue", scrub_overdue),
    ("slog_suggested_hdd", slog_suggested_hdd),
    ("slog_not_mirrored", slog_not_mirrored),
    ("l2arc_considerations", l2arc_considerations),
    ("prefetch_disabled", prefetch_disabled),
    ("autotrim_off_ssd", autotrim_off_ssd),
    ("raid_controller_below_zfs", raid_controller_below_zfs),
)
