"""Advisor rules about ZFS datasets, pools, module versions and disks."""

from __future__ import annotations

from apps.remote.facts.host import Dataset, Disk, Pool
from apps.remote.sizes import KiB, parse_zfs_size
from apps.tuning.core import facts as r
from apps.tuning.core import sources as src
from apps.tuning.core.findings import Context, Finding, Rule

LOSSY_SYNC_METHODS = ("fdatasync", "open_datasync")


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
    return [Finding(
        "txg_timeout_low", "info" if acknowledged else "warning",
        f"zfs_txg_timeout={value} (default 5)", f"module parameter zfs_txg_timeout={value}",
        "Shorter transaction groups bound what sync=disabled can lose, at the price of more,"
        " smaller writes for every pool on the host (measured: +12% TPS with sync=disabled).",
        "Keep it only together with an acknowledged bounded-loss profile; otherwise 5.",
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


def recordsize_below_8k(ctx: Context) -> list[Finding]:
    return [Finding(
        "recordsize_below_8k", "warning", f"recordsize below 8K on {d.name}",
        f"{d.name}: recordsize={r.prop(d, 'recordsize')}",
        "A PostgreSQL page is 8K: smaller records split every page, and full_page_writes=off"
        " is only safe when a page cannot be split.",
        f"zfs set recordsize=16K {d.name} (newly written data only)",
        src.OPENZFS_WORKLOAD, subject=d.name,
    ) for _, _, d in ctx.pg_datasets() if (_recordsize(d) or 8 * KiB) < 8 * KiB]


def recordsize_large_for_oltp(ctx: Context) -> list[Finding]:
    """Informational: large records suit analytics; for OLTP the trade-off is stated."""
    return [Finding(
        "recordsize_large_for_oltp", "info", f"recordsize {r.prop(d, 'recordsize')} on OLTP data",
        f"{d.name} (data of {c.data_dir}): recordsize={r.prop(d, 'recordsize')}",
        "Random 8K page writes into large records cost read-modify-write. Measured: 16K"
        " records gave about +20% TPS over 8K for OLTP; 128K records compress 7.6x against"
        " 1.7x at 8K, which favours analytics.",
        f"For OLTP: zfs set recordsize=16K {d.name}; keep it for analytics.",
        f"{src.NIMBUS}; {src.PG_PHRIDAY_ZFS}", subject=d.name,
    ) for c, role, d in ctx.pg_datasets()
        if role == "data" and (_recordsize(d) or 0) >= 64 * KiB
        and not ctx.large_records_intended]


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
    caps = r.capabilities(ctx.facts)
    multi = caps is None or caps.multi_snapshot is not False  # not known: assume it can
    found = []
    for c in ctx.facts.clusters:
        data, wal = c.data_dataset, c.wal_dataset
        if not data or not wal or data == wal:
            continue
        if r.pool_of(data) != r.pool_of(wal):
            why = "A consistent snapshot of data and WAL needs one atomic `zfs snapshot a@s b@s`," \
                  " and that is only atomic within one pool."
        elif not multi:
            why = "This ZFS cannot snapshot two datasets in one atomic command, so data and WAL" \
                  " snapshots are taken at different instants."
        else:
            continue
        found.append(Finding(
            "data_wal_different_pools", "warning", f"no atomic snapshot of {c.data_dir}",
            f"data on {data}, WAL on {wal}", why,
            "Keep data and WAL in one pool, or take backups with pg_backup_start/stop around"
            " the snapshots.", src.PG_PHRIDAY_ZFS, subject=c.data_dir))
    return found


# Versions hit by openzfs/zfs#15526 (zeroed chunks after sparse copies): the
# offset_next_sync default arrived in 2.1.4; fixed in 2.1.14 and 2.2.2.
def _corruption_window(version: tuple[int, int, int]) -> bool:
    return (2, 1, 4) <= version < (2, 1, 14) or (2, 2, 0) <= version < (2, 2, 2)


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
        " read zeros (#15526); fixed in 2.1.14 and 2.2.2 (2.2.4 for the follow-up #15933).",
        "Upgrade to 2.2.4 or later (2.1.14+ on 2.1)" + (
            "" if workaround else "; until then write 0 to zfs_dmu_offset_next_sync"),
        f"{src.OPENZFS_15526}; {src.CAMPOLI}",
    )]


def bclone_enabled_affected(ctx: Context) -> list[Finding]:
    version = r.zfs_version(ctx.facts)
    if version is None or not (2, 2, 0) <= version < (2, 2, 4) \
            or r.module_param(ctx.facts, "zfs_bclone_enabled") != "1":
        return []
    return [Finding(
        "bclone_enabled_affected", "critical", "block cloning enabled on an affected OpenZFS",
        f"kernel module {'.'.join(map(str, version))}; zfs_bclone_enabled=1",
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
    risky = [d for d in r.physical_disks(ctx.facts) if _volatile(d)]
    if not risky:
        return []
    names = ", ".join(d.name for d in risky)
    nvme = [d.name for d in risky if d.transport == "nvme"]
    fix = "; ".join(f"nvme set-feature -f 6 -v 0 /dev/{n}" for n in nvme) or \
        "disable the drive write cache"
    return [Finding(
        "volatile_write_cache_sync_method", "warning",
        f"wal_sync_method={method} over a volatile write cache",
        f"wal_sync_method={method}; volatile write cache on {names}",
        "A drive that acknowledges flushes from a volatile cache loses them on power"
        " failure; consumer NVMe drives corrupted a cluster this way under pgbench.",
        f"{fix}; or set wal_sync_method=fsync", src.NIMBUS, subject=c.data_dir,
    ) for c in ctx.clusters()
        if (method := r.setting_value(c, "wal_sync_method")) in LOSSY_SYNC_METHODS]


def _volatile(disk: Disk) -> bool:
    """The controller's own answer wins; the kernel's view counts only for SSDs without one."""
    if disk.volatile_write_cache is not None:
        return disk.volatile_write_cache
    return disk.write_cache == "write back" and disk.rotational is False


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
)
