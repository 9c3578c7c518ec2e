"""Advisor rules about PostgreSQL settings and host memory."""

from __future__ import annotations

from apps.common.sizes import GiB, KiB, MiB, parse_zfs_size
from apps.common.sizes import format_gib as gib
from apps.remote.facts.numbers import is_digits
from apps.remote.facts.zfs import ZFS_FUSE
from apps.tuning.core import facts as r
from apps.tuning.core import sources as src
from apps.tuning.core.findings import Context, Finding, Rule

# Conservative write rates per storage kind, to turn a dirty limit into a drain time.
# "cloud": network block storage seen as NVMe (EBS gp3's baseline is 125 MiB/s).
DRAIN_RATE = {"hdd": 100 * MiB, "ssd": 300 * MiB, "nvme": 1 * GiB, "cloud": 125 * MiB}
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
    kind = r.storage_class(ctx.facts, (ctx.facts.clusters or [None])[0])
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


def zfs_dirty_data_large(ctx: Context) -> list[Finding]:
    """ZFS file data never shows in the page cache's Dirty: ZFS has its own limit."""
    limit = _zfs_dirty_limit(ctx)
    kind = r.storage_class(ctx.facts, (ctx.facts.clusters or [None])[0])
    if limit is None or not ctx.facts.clusters or limit[0] <= DRAIN_RATE[kind] * DRAIN_SECONDS:
        return []
    size, evidence = limit
    return [Finding(
        "zfs_dirty_data_large", "info", "ZFS dirty data limit larger than the storage drains",
        f"{evidence}; {kind} storage drains about {gib(DRAIN_RATE[kind])}/s, so this is about"
        f" {size // DRAIN_RATE[kind]} s of writes (heuristic limit {DRAIN_SECONDS} s)",
        "ZFS buffers file writes in its own dirty data (up to zfs_dirty_data_max), not in the"
        " page cache that Linux's vm.dirty_* settings (and /proc/meminfo's Dirty) cover. ZFS"
        " throttles writers progressively as it fills (from zfs_delay_min_dirty_percent,"
        " 60%), gentler than Linux's cliff the Stampede article measured, but a limit the"
        " pool needs this long to write still means long stalls for checkpoints' fsyncs.",
        "Lower zfs_dirty_data_max to what the pool writes in a few seconds (e.g. 1GB on"
        " SSD-class or cloud storage), in /etc/modprobe.d/zfs.conf to keep it.",
        f"{src.STAMPEDE}; {src.OPENZFS_MODULE}")]


def _zfs_dirty_limit(ctx: Context) -> tuple[int, str] | None:
    """zfs_dirty_data_max (bytes), else its percent of RAM; capped by _max_max when set."""
    size = r.module_param(ctx.facts, "zfs_dirty_data_max")
    percent = r.module_param(ctx.facts, "zfs_dirty_data_max_percent")
    if size and is_digits(size) and int(size) > 0:
        return int(size), f"zfs_dirty_data_max={size} ({gib(int(size))})"
    if percent and is_digits(percent) and ctx.ram:
        limit = ctx.ram * int(percent) // 100
        cap = r.module_param(ctx.facts, "zfs_dirty_data_max_max")
        if cap and is_digits(cap) and int(cap) > 0:
            limit = min(limit, int(cap))
        return limit, f"zfs_dirty_data_max_percent={percent} (about {gib(limit)})"
    return None


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


def _os_reserve(ram: int) -> int:
    return max(GiB, ram // 8)  # as formulas.OS_RESERVE


def memory_overcommitted(ctx: Context) -> list[Finding]:
    """shared_buffers + ARC + one work_mem per connection + the OS must fit in RAM."""
    ram, arc = ctx.ram, r.arc_max(ctx.facts)
    clusters = ctx.clusters()
    if not ram or not arc or not clusters:
        return []
    buffers = _shared_buffers_total(ctx)
    sorts = sum(_connections(c) * (r.setting_bytes(c, "work_mem") or 4 * MiB) for c in clusters)
    total = buffers + arc + sorts + _os_reserve(ram)
    if total <= ram:
        return []
    return [Finding(
        "memory_overcommitted", "warning", "memory budget exceeds RAM",
        f"shared_buffers {gib(buffers)} + ARC max {gib(arc)} + max_connections x work_mem"
        f" {gib(sorts)} + OS reserve {gib(_os_reserve(ram))} = {gib(total)} of {gib(ram)} RAM",
        "Each of these is sized as if it had the memory to itself: when every connection"
        " sorts at once the ARC cannot shrink fast enough and the OOM killer picks"
        " PostgreSQL (one query may even use several work_mem).",
        "Lower work_mem, max_connections or zfs_arc_max until the sum fits; PoZoL's profiles"
        " split what shared_buffers and the OS leave between the ARC and work_mem.",
        f"{src.PGTUNE}; {src.CAMPOLI}")]


def _connections(cluster) -> int:
    value = r.setting_value(cluster, "max_connections")
    return int(value) if value and is_digits(value) else 100


HUGE_PAGE = 2 * MiB


def huge_pages_not_sized(ctx: Context) -> list[Finding]:
    buffers, pages = _shared_buffers_total(ctx), r.sysctl(ctx.facts, "vm.nr_hugepages")
    if pages is None or buffers < 8 * GiB:
        return []  # small buffers: page tables stay small, the gain is not worth the setup
    if pages * HUGE_PAGE >= buffers:
        return []
    modes = {r.setting_value(c, "huge_pages") for c in ctx.clusters()} - {None}
    wanted, basis = _huge_pages_wanted(ctx, buffers)
    return [Finding(
        "huge_pages_not_sized", "info", "shared_buffers not backed by huge pages",
        f"shared_buffers {gib(buffers)}; vm.nr_hugepages={pages} ({gib(pages * HUGE_PAGE)});"
        f" huge_pages={'/'.join(sorted(modes)) or 'not known'}",
        "With 4K pages every backend maps shared_buffers with its own page tables (gigabytes"
        " on a large, busy server) and TLB misses cost CPU; huge pages avoid both.",
        f"vm.nr_hugepages={wanted} ({basis}) and huge_pages=try (or on), then restart"
        " PostgreSQL.",
        f"{src.CAMPOLI}; {src.PG_DOCS}")]


def _huge_pages_wanted(ctx: Context, buffers: int) -> tuple[int, str]:
    """PostgreSQL 15+ reports its own need (shared_memory_size_in_huge_pages); else +5%."""
    exact = [r.setting_value(c, "shared_memory_size_in_huge_pages") for c in ctx.clusters()]
    if exact and all(value and is_digits(value) and int(value) > 0 for value in exact):
        return (sum(int(value or 0) for value in exact),
                "what PostgreSQL reports as shared_memory_size_in_huge_pages")
    return buffers * 21 // 20 // HUGE_PAGE + 1, "shared_buffers + 5%, in 2MB pages"


def memory_overcommit_default(ctx: Context) -> list[Finding]:
    mode = r.sysctl(ctx.facts, "vm.overcommit_memory")
    if mode is None or mode == 2 or not ctx.clusters():
        return []
    return [Finding(
        "memory_overcommit_default", "info", f"vm.overcommit_memory={mode}",
        f"vm.overcommit_memory={mode}; vm.overcommit_ratio="
        f"{r.sysctl(ctx.facts, 'vm.overcommit_ratio')}",
        "With heuristic overcommit the kernel promises more memory than it has and, when"
        " the promise is called, the OOM killer ends the postmaster or a backend (a crash"
        " and recovery for every session); with mode 2 an allocation fails cleanly instead.",
        "vm.overcommit_memory=2 with vm.overcommit_ratio sized so swap + RAM x ratio covers"
        " shared_buffers, the ARC and the backends (check CommitLimit in /proc/meminfo).",
        f"{src.CAMPOLI}; {src.PG_DOCS}")]


def full_page_writes_off_standby(ctx: Context) -> list[Finding]:
    """full_page_writes=off on a standby, or on a primary with standbys or physical slots.

    Standbys streaming now (pg_stat_replication) and physical replication slots
    (pg_replication_slots, active or not: a slot is kept for a standby or a
    backup that comes back) are discovery facts; logical slots replicate rows,
    not pages, so they do not count.
    """
    found = []
    for c in ctx.clusters():
        if r.setting_value(c, "full_page_writes") != "off":
            continue
        role = _replication_role(c)
        if role is None:
            continue
        unknown = c.stats is None
        found.append(Finding(
            "full_page_writes_off_standby", "warning",
            "full_page_writes=off where replication is involved",
            f"{c.data_dir}: full_page_writes=off; {role}",
            "ZFS only protects this host's own pages. Without full-page images, backups"
            " taken from a standby (pg_basebackup against it) can hold torn pages, a"
            " cascading standby cannot be rebuilt from it, and pg_rewind after a failover"
            " needs them (or wal_log_hints with data checksums).",
            "Keep full_page_writes=on on clusters involved in replication or backed up from a"
            " standby; turn it off only on a stand-alone primary."
            + (" Standbys and replication slots were not read at discovery: check"
               " pg_replication_slots and pg_stat_replication too." if unknown else ""),
            f"{src.PG_DOCS}; {src.NIMBUS}", subject=c.data_dir))
    return found


def _replication_role(c) -> str | None:
    """Why this cluster takes part in physical replication, in words; None: it does not."""
    stats = c.stats
    if r.setting_value(c, "primary_conninfo") or (stats and stats.in_recovery):
        return "primary_conninfo is set or the server is in recovery (this cluster is a standby)"
    if names := r.setting_value(c, "synchronous_standby_names"):
        return f"synchronous_standby_names={names} (this primary has standbys)"
    slots = [s for s in stats.slots if s.type == "physical"] if stats else []
    if stats and (stats.standbys or slots):
        named = ", ".join(f"{s.name} ({'active' if s.active else 'inactive'})" for s in slots)
        return (f"{stats.standbys} standby(s) streaming (pg_stat_replication);"
                f" physical replication slots: {named or 'none'}")
    return None


def wal_compression_on_zfs(ctx: Context) -> list[Finding]:
    found = []
    datasets = r.datasets(ctx.facts)
    for c in ctx.clusters():
        method = r.setting_value(c, "wal_compression")
        wal = datasets.get(c.wal_dataset or c.data_dataset or "")
        compression = r.prop(wal, "compression")
        if method in (None, "off") or compression in (None, "off"):
            continue
        found.append(Finding(
            "wal_compression_on_zfs", "info", "WAL compressed twice",
            f"wal_compression={method}; {wal.name} compression={compression}",
            "ZFS already compresses the WAL dataset; compressing full-page images in"
            " PostgreSQL as well spends CPU in the backends for little more saving (and with"
            " full_page_writes=off there is almost nothing left to compress).",
            "Set wal_compression=off and leave compression to ZFS (the same holds for"
            " large TOAST tables: the advisor names those PostgreSQL compresses).",
            f"{src.NIMBUS}; {src.PG_PHRIDAY_ZFS}", subject=c.data_dir))
    return found


def max_connections_high(ctx: Context) -> list[Finding]:
    cpus = ctx.facts.cpus or 0
    limit = max(200, cpus * 4)
    return [Finding(
        "max_connections_high", "info", f"max_connections={n}",
        f"{c.data_dir}: max_connections={n} with {cpus or 'unknown'} CPUs",
        "Each connection is a process with its own memory and its own work_mem budget;"
        " hundreds of active ones contend for CPUs and locks, and size every per-connection"
        " setting down.",
        f"Put a pooler (PgBouncer) in front and keep max_connections near a few times the"
        f" CPU count (here about {limit} at most).",
        f"{src.PGTUNE}; {src.PG_DOCS}", subject=c.data_dir,
    ) for c in ctx.clusters() if (n := _connections(c)) > limit]


MIN_CHECKPOINTS = 10  # fewer since the statistics were reset show no pattern


def checkpoints_requested(ctx: Context) -> list[Finding]:
    """Most checkpoints requested (WAL reached max_wal_size) rather than timed."""
    found = []
    for c in ctx.clusters():
        stats = c.stats
        if stats is None or stats.in_recovery is not False:
            continue  # a standby's counters are restartpoints, not its own checkpoints
        timed, requested = stats.checkpoints_timed, stats.checkpoints_requested
        if timed is None or requested is None or requested <= timed \
                or timed + requested < MIN_CHECKPOINTS:
            continue
        found.append(Finding(
            "checkpoints_requested", "info", "most checkpoints are requested, not timed",
            f"{c.data_dir}: checkpoints requested {requested}, timed {timed} since"
            f" {stats.stats_reset or 'the last statistics reset'};"
            f" max_wal_size={_with_unit(c, 'max_wal_size')},"
            f" checkpoint_timeout={_with_unit(c, 'checkpoint_timeout')}",
            "A checkpoint comes before checkpoint_timeout when the WAL written since the last"
            " one reaches max_wal_size (the server log then says \"checkpoints are occurring"
            " too frequently ... Consider increasing max_wal_size\"). Each one writes the hot"
            " pages again and, with full_page_writes=on, the first change to every page after"
            " it logs a full page image: more WAL and more I/O. The count also includes"
            " CHECKPOINT commands (PoZoL runs one before each cluster snapshot) and base"
            " backups: if those are most of them, there is nothing to tune.",
            "Raise max_wal_size (double it, reload) until most checkpoints are timed, and keep"
            " room for that much WAL on the WAL dataset.",
            f"{src.NIMBUS}; {src.STAMPEDE}; {src.PG_DOCS}", subject=c.data_dir))
    return found


def _with_unit(cluster, name: str) -> str:
    row = r.setting(cluster, name)
    return f"{row.setting}{row.unit or ''}" if row else "not known"


def transparent_huge_pages_always(ctx: Context) -> list[Finding]:
    enabled, defrag = ctx.facts.thp_enabled, ctx.facts.thp_defrag
    if enabled != "always" or not ctx.facts.clusters:
        return []
    return [Finding(
        "transparent_huge_pages_always", "warning" if defrag == "always" else "info",
        "transparent huge pages always on",
        f"/sys/kernel/mm/transparent_hugepage: enabled={enabled},"
        f" defrag={defrag or 'not known'}",
        "With THP always, the kernel backs backends' private memory with 2MB pages whether"
        " it helps or not: memory use grows, khugepaged and compaction run behind"
        " PostgreSQL's back, and with defrag=always a page fault waits while the kernel"
        " compacts memory (latency spikes). shared_buffers gains nothing from it: shared"
        " memory follows shmem_enabled, not enabled; explicit huge pages are what serve it.",
        "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (and the same for"
        " defrag), kept across reboots with transparent_hugepage=madvise on the kernel"
        " command line; back shared_buffers with explicit huge pages (huge_pages=try,"
        " vm.nr_hugepages) instead.",
        f"{src.LINUX_THP}; {src.PG_DOCS}")]


RULES: tuple[tuple[str, Rule], ...] = (
    ("zfs_fuse_large_shared_buffers", zfs_fuse_large_shared_buffers),
    ("full_page_writes_off_not_zfs", full_page_writes_off_not_zfs),
    ("arc_plus_shared_buffers", arc_plus_shared_buffers),
    ("shared_buffers_over_40pct", shared_buffers_over_40pct),
    ("dirty_limit_large", dirty_limit_large),
    ("dirty_background_missing", dirty_background_missing),
    ("wal_level_minimal_copy", wal_level_minimal_copy),
    ("data_checksums_off", data_checksums_off),
    ("zfs_dirty_data_large", zfs_dirty_data_large),
    ("memory_overcommitted", memory_overcommitted),
    ("huge_pages_not_sized", huge_pages_not_sized),
    ("memory_overcommit_default", memory_overcommit_default),
    ("full_page_writes_off_standby", full_page_writes_off_standby),
    ("wal_compression_on_zfs", wal_compression_on_zfs),
    ("max_connections_high", max_connections_high),
    ("checkpoints_requested", checkpoints_requested),
    ("transparent_huge_pages_always", transparent_huge_pages_always),
)
