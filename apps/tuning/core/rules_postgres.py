"""Advisor rules about PostgreSQL settings and host memory."""

from __future__ import annotations

from apps.remote.facts.zfs import ZFS_FUSE
from apps.remote.sizes import GiB, KiB, MiB, parse_zfs_size
from apps.remote.sizes import format_gib as gib
from apps.tuning.core import facts as r
from apps.tuning.core import sources as src
from apps.tuning.core.findings import Context, Finding, Rule

# Conservative write rates per storage kind, to turn a dirty limit into a drain time.
DRAIN_RATE = {"hdd": 100 * MiB, "ssd": 300 * MiB, "nvme": 1 * GiB}
DRAIN_SECONDS = 10  # Steady Storage Stampede: 1GB took 30s on slow cloud storage, <10s on fast
LARGE_BUFFERS_FOR_MINIMAL = 4 * GiB


def full_page_writes_off_not_zfs(ctx: Context) -> list[Finding]:
    found = []
    for c in ctx.clusters():
        if r.setting_value(c, "full_page_writes") != "off":
            continue
        data = r.datasets(ctx.facts).get(c.data_dataset or "")
        record = parse_zfs_size(r.prop(data, "recordsize") or "") if data else None
        if data is None:
            evidence = f"full_page_writes=off; {c.data_dir} is not on a ZFS dataset"
        elif record is not None and record < 8 * KiB:
            evidence = f"full_page_writes=off on {data.name} with recordsize={record}"
        else:
            continue
        found.append(Finding(
            "full_page_writes_off_not_zfs", "critical", "full_page_writes=off without ZFS",
            evidence,
            "Only a copy-on-write filesystem that never splits a page makes full_page_writes"
            " unnecessary; elsewhere a crash mid-write leaves a torn page WAL cannot repair.",
            "Set full_page_writes=on (reload).", f"{src.PG_PHRIDAY_ZFS}; {src.OPENZFS_WORKLOAD}",
            subject=c.data_dir))
    return found


def _shared_buffers_total(ctx: Context) -> int:
    return sum(r.setting_bytes(c, "shared_buffers") or 0 for c in ctx.clusters())


def arc_plus_shared_buffers(ctx: Context) -> list[Finding]:
    arc, buffers, ram = r.arc_max(ctx.facts), _shared_buffers_total(ctx), ctx.ram
    if not arc or not ram or not buffers or ram - arc - buffers >= ram / 8:
        return []
    return [Finding(
        "arc_plus_shared_buffers", "critical" if arc + buffers >= ram else "warning",
        "ARC and shared_buffers leave too little memory",
        f"ARC max {gib(arc)} + shared_buffers {gib(buffers)} of {gib(ram)} RAM leaves"
        f" {gib(ram - arc - buffers)} (< 1/8)",
        "Both caches hold the same pages (double caching), and backends, the kernel and"
        " work_mem need the rest: the ARC shrinks too slowly and the OOM killer picks PostgreSQL.",
        "Lower zfs_arc_max to leave shared_buffers plus max(1GB, RAM/8) free.",
        f"{src.CAMPOLI}; {src.OPENZFS_MODULE}")]


def shared_buffers_over_40pct(ctx: Context) -> list[Finding]:
    buffers, ram = _shared_buffers_total(ctx), ctx.ram
    if not ram or buffers <= ram * 0.4:
        return []
    return [Finding(
        "shared_buffers_over_40pct", "warning", "shared_buffers above 40% of RAM",
        f"shared_buffers {gib(buffers)} of {gib(ram)} RAM ({buffers * 100 // ram}%)",
        "PostgreSQL also relies on the file cache (the ARC on ZFS); oversized buffers starve"
        " it and make every buffer-pool scan longer.",
        "Size shared_buffers at about RAM/4 (PGTune).", f"{src.CAMPOLI}; {src.PGTUNE}")]


def _dirty_limit(ctx: Context) -> tuple[int | None, str]:
    """The foreground dirty limit in bytes; ratios count against RAM (an upper bound)."""
    size, ratio = r.sysctl(ctx.facts, "vm.dirty_bytes"), r.sysctl(ctx.facts, "vm.dirty_ratio")
    if size:
        return size, f"vm.dirty_bytes={size} ({gib(size)})"
    if ratio and ctx.ram:
        limit = ctx.ram * ratio // 100
        return limit, f"vm.dirty_ratio={ratio} (about {gib(limit)})"
    return None, ""


def dirty_limit_large(ctx: Context) -> list[Finding]:
    limit, evidence = _dirty_limit(ctx)
    kind = r.disk_kind(ctx.facts, (ctx.facts.clusters or [None])[0])
    budget = DRAIN_RATE[kind] * DRAIN_SECONDS
    if limit is None or limit <= budget:
        return []
    return [Finding(
        "dirty_limit_large", "warning", "kernel dirty limit larger than the storage drains",
        f"{evidence}; {kind} storage drains about {gib(DRAIN_RATE[kind])}/s, so this is about"
        f" {limit // DRAIN_RATE[kind]} s of writes (heuristic limit {DRAIN_SECONDS} s)",
        "When dirty memory reaches the limit Linux stalls every writer until it drains: TPS"
        " fell off a cliff and checkpoints' fsyncs took 8-12 s. ZFS file data has its own"
        " limit (zfs_dirty_data_max); this one governs every non-ZFS filesystem on the host.",
        "Set vm.dirty_bytes to what the storage writes in a few seconds (1GB on SSD-class"
        " storage) and vm.dirty_background_bytes to 25% of it.", src.STAMPEDE)]


def dirty_background_missing(ctx: Context) -> list[Finding]:
    size = r.sysctl(ctx.facts, "vm.dirty_background_bytes")
    ratio = r.sysctl(ctx.facts, "vm.dirty_background_ratio")
    limit, _ = _dirty_limit(ctx)
    background = size or ((ctx.ram or 0) * (ratio or 0) // 100)
    if size is None and ratio is None:
        return []
    if background and (limit is None or background < limit):
        return []
    return [Finding(
        "dirty_background_missing", "warning", "no useful background writeback threshold",
        f"vm.dirty_background_bytes={size}"
        f"{f' ({gib(size)})' if size else ''}, vm.dirty_background_ratio={ratio}",
        "Without a background threshold below the dirty limit, writeback starts only when"
        " writers are already being stalled.",
        "Set vm.dirty_background_bytes to 25% of vm.dirty_bytes.", src.STAMPEDE)]


def wal_level_minimal_copy(ctx: Context) -> list[Finding]:
    found = []
    for c in ctx.clusters():
        buffers = r.setting_bytes(c, "shared_buffers") or 0
        if r.setting_value(c, "wal_level") != "minimal" or buffers < LARGE_BUFFERS_FOR_MINIMAL:
            continue
        major = r.pg_major(c) or 0
        found.append(Finding(
            "wal_level_minimal_copy", "warning" if major <= 12 else "info",
            "wal_level=minimal with large shared_buffers",
            f"PostgreSQL {major}; wal_level=minimal; shared_buffers {gib(buffers)}",
            _minimal_behaviour(major),
            "Use wal_level=replica, or load with one large COPY per table instead of many"
            " small ones in the transaction that created it.", src.WAL_MINIMAL_PAPER,
            subject=c.data_dir))
    return found


def _minimal_behaviour(major: int) -> str:
    cost = ("Under wal_level=minimal, COPY into a table created (or truncated) in the same"
            " transaction skips WAL and then scans all of shared_buffers to flush the table"
            " (FlushRelationBuffers).")
    if major <= 12:
        return (f"{cost} On PostgreSQL {major} that scan runs after every such COPY: the paper"
                " measured 10x-300x slower loads on 10.6 with 50GB buffers (still 2x at 8GB)"
                " and reports 12 affected.")
    return (f"{cost} PostgreSQL {major} defers the sync to commit (PostgreSQL 13 reworked WAL"
            " skipping, with wal_skip_threshold), so the per-COPY scan the paper measured on"
            " 10-12 should be gone; the paper does not cover 13+, so measure before relying"
            " on it.")


def data_checksums_off(ctx: Context) -> list[Finding]:
    return [Finding(
        "data_checksums_off", "info", f"data checksums off on {c.data_dir}",
        "data_checksums=off",
        "ZFS checksums every block on disk; PostgreSQL checksums also catch damage above the"
        " filesystem (memory, kernel or ZFS bugs such as the 2.2.0 corruption) at some CPU"
        " and WAL cost. Opinions differ: NimbusWS leaves them off on ZFS, Campoli turns them on.",
        "If wanted: pg_checksums --enable on the cleanly stopped cluster (PostgreSQL 12+).",
        f"{src.CAMPOLI}; {src.NIMBUS}", subject=c.data_dir,
    ) for c in ctx.facts.clusters if c.data_checksums is False]


# PoZoL's own test fleet: pgbench against shared_buffers of 256MB or more stalled
# the zfs-fuse daemon every time (a backend's fdatasync stuck in FUSE, every
# zfs-fuse thread in a futex wait); 128MB never did.
ZFS_FUSE_SAFE_BUFFERS = 128 * MiB


def zfs_fuse_large_shared_buffers(ctx: Context) -> list[Finding]:
    if ctx.facts.zfs is None or ctx.facts.zfs.dialect != ZFS_FUSE:
        return []
    return [Finding(
        "zfs_fuse_large_shared_buffers", "warning", "zfs-fuse stalls with large shared_buffers",
        f"shared_buffers {gib(size)} on zfs-fuse ({c.data_dir})",
        "Under a write load with shared_buffers of 256MB or more, the zfs-fuse daemon stopped"
        " answering fsync: transactions hung until the daemon was killed.",
        "Keep shared_buffers at 128MB on zfs-fuse, or move the data to OpenZFS.",
        src.POZOL_FLEET,
        subject=c.data_dir,
    ) for c in ctx.clusters()
        if (size := r.setting_bytes(c, "shared_buffers") or 0) > ZFS_FUSE_SAFE_BUFFERS]


RULES: tuple[tuple[str, Rule], ...] = (
    ("zfs_fuse_large_shared_buffers", zfs_fuse_large_shared_buffers),
    ("full_page_writes_off_not_zfs", full_page_writes_off_not_zfs),
    ("arc_plus_shared_buffers", arc_plus_shared_buffers),
    ("shared_buffers_over_40pct", shared_buffers_over_40pct),
    ("dirty_limit_large", dirty_limit_large),
    ("dirty_background_missing", dirty_background_missing),
    ("wal_level_minimal_copy", wal_level_minimal_copy),
    ("data_checksums_off", data_checksums_off),
)
