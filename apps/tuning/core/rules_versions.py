"""Advisor rules that exist because of one version: PostgreSQL 18, OpenZFS 2.3.

Each fires only where its version says so (the cluster's major from
server_version_num, the kernel module's version from `zfs version`), so a
host on an older release never hears about a default it does not have.
"""

from __future__ import annotations

from apps.common.sizes import MiB
from apps.common.sizes import format_gib as gib
from apps.tuning.core import facts as r
from apps.tuning.core import sources as src
from apps.tuning.core.findings import Context, Finding, Rule
from apps.tuning.core.rules_postgres import _connections, _os_reserve, _shared_buffers_total

PG_AIO = 18  # io_method, io_workers; initdb's data checksums on by default
OPENZFS_23 = (2, 3, 0)  # Linux ARC default as FreeBSD's (#15437); the `direct` property
MIN_ARC_MAX = 64 * MiB  # arc_tuning_update() ignores a smaller zfs_arc_max


def _version(facts) -> str:
    version = r.zfs_version(facts)
    return ".".join(map(str, version)) if version else "unknown"


def _pg_version(cluster) -> str:
    """18.4 from pg_settings' server_version; the major alone where that was not read."""
    return r.setting_value(cluster, "server_version") or str(r.pg_major(cluster))


def io_method_on_zfs(ctx: Context) -> list[Finding]:
    """PostgreSQL 18's asynchronous I/O on ZFS: `worker` (the default) is the one to keep."""
    found = []
    for c in ctx.clusters():
        method = r.setting_value(c, "io_method")
        if (r.pg_major(c) or 0) < PG_AIO or not c.data_dataset or method not in IO_METHOD_WHY:
            continue
        found.append(Finding(
            "io_method_on_zfs", "info", f"io_method={method} on ZFS",
            f"PostgreSQL {_pg_version(c)}; io_method={method},"
            f" io_workers={r.setting_value(c, 'io_workers') or 'not known'}; data on"
            f" {c.data_dataset} (OpenZFS {_version(ctx.facts)})",
            IO_METHOD_WHY[method],
            "Keep io_method=worker (the default; a restart applies it) and raise io_workers"
            " (default 3, reloadable) if reads queue behind the workers on a busy host.",
            f"{src.PG18_AIO}; {src.OPENZFS_ZPL_NOWAIT}", subject=c.data_dir))
    return found


IO_METHOD_WHY = {
    "io_uring": (
        "PostgreSQL 18 reads ahead asynchronously; io_uring (only in builds with liburing)"
        " pays off where the filesystem can start a buffered read without blocking. ZFS"
        " cannot: its Linux file operations have no non-blocking (FMODE_NOWAIT) read path,"
        " so the kernel completes each read in its own worker threads, or in the backend's"
        " submit call on some kernels. That is at best what io_method=worker does with"
        " PostgreSQL's own I/O workers, with io_uring's setup and limits on top."),
    "sync": (
        "io_method=sync gives up PostgreSQL 18's asynchronous read-ahead: sequential scans,"
        " bitmap heap scans and VACUUM wait for each read as PostgreSQL 17 did. The default"
        " io_method=worker hands those reads to I/O worker processes, which works on any"
        " filesystem, ZFS included (its own prefetch still helps either way)."),
}


def data_checksums_pg18_default(ctx: Context) -> list[Finding]:
    """18's initdb turns checksums on unless told not to: on ZFS that is a choice to make."""
    return [Finding(
        "data_checksums_pg18_default", "info",
        f"data checksums on (PostgreSQL {r.pg_major(c)}'s default) on ZFS",
        f"PostgreSQL {_pg_version(c)}; data_checksums=on; data on"
        f" {c.data_dataset}; wal_log_hints={r.setting_value(c, 'wal_log_hints') or 'not known'}",
        "PostgreSQL 18's initdb enables data checksums unless given --no-data-checksums. ZFS"
        " already checksums every block it stores and repairs from redundancy, so on ZFS"
        " the page checksums are a second layer: a checksum computed on every page written"
        " out of shared_buffers and verified on every page read in (CPU), and hint-bit"
        " changes WAL-logged as with wal_log_hints=on: the first one on a page after each"
        " checkpoint writes a full-page image (with full_page_writes=on, the default), so"
        " more WAL and more writes. What they buy is detection of damage above ZFS: memory,"
        " kernel or ZFS bugs such as the 2.2.0 corruption. NimbusWS turns them off on ZFS,"
        " Shaun Thomas sees no need to re-initialize a cluster on ZFS just to get them,"
        " Federico Campoli recommends them.",
        "Decide per cluster: keep them (and count their WAL in max_wal_size) where silent"
        " damage above the filesystem is the bigger risk; otherwise pg_checksums --disable"
        " on the cleanly stopped cluster, or initdb --no-data-checksums for new ones.",
        f"{src.PG18_CHECKSUMS}; {src.NIMBUS_NO_CHECKSUMS}; {src.PG_PHRIDAY_ZFS};"
        f" {src.CAMPOLI}", subject=c.data_dir,
    ) for c in ctx.clusters()
        if (r.pg_major(c) or 0) >= PG_AIO and c.data_checksums and c.data_dataset]


def arc_default_openzfs_23(ctx: Context) -> list[Finding]:
    """OpenZFS 2.3 on Linux sizes the ARC at max(RAM - 1 GiB, 5/8 RAM) when left automatic
    (module/os/linux/zfs/arc_os.c arc_default_max(); up to 2.2 it was half of RAM)."""
    version = r.zfs_version(ctx.facts)
    if version is None or version < OPENZFS_23 or r.module_param(ctx.facts, "zfs_arc_max") \
            != "0" or not ctx.clusters() or not ctx.ram:
        return []
    ram, ceiling = ctx.ram, r.arc_max(ctx.facts)
    buffers = _shared_buffers_total(ctx)
    sorts = sum(_connections(c) * (r.setting_bytes(c, "work_mem") or 4 * MiB)
                for c in ctx.clusters())
    room = ram - buffers - sorts - _os_reserve(ram)
    advice = (f"write about {room // MiB * MiB} ({gib(room)}) to zfs_arc_max" if
              room >= MIN_ARC_MAX else "first lower work_mem or shared_buffers: nothing"
              " is left for the ARC")
    return [Finding(
        "arc_default_openzfs_23", "info", "OpenZFS 2.3 lets the ARC grow to nearly all RAM",
        f"OpenZFS {_version(ctx.facts)}; zfs_arc_max=0 (automatic); ARC max (arcstats c_max)"
        f" {gib(ceiling)} of {gib(ram)} RAM; shared_buffers {gib(buffers)}, max_connections x"
        f" work_mem {gib(sorts)}",
        "From 2.3 on, OpenZFS on Linux sizes the ARC by default like FreeBSD: the larger of"
        " RAM - 1 GiB and 5/8 of RAM, where 2.2 and older stopped at half of RAM. A"
        " PostgreSQL sized beside a half-RAM ARC finds the ARC grown by an upgrade; the ARC"
        " gives memory back only under pressure, more slowly than backends ask for it.",
        f"Leave room for shared_buffers, work_mem per connection and the OS: {advice}, live"
        " and in /etc/modprobe.d/zfs.conf (a profile's zfs_arc_max formula does both).",
        f"{src.OPENZFS_23_RELEASE}; {src.OPENZFS_MODULE}; {src.CAMPOLI}")]


def direct_io_always(ctx: Context) -> list[Finding]:
    """The `direct` property exists from 2.3; PostgreSQL does buffered I/O, so only
    direct=always changes anything for it, for the worse."""
    version = r.zfs_version(ctx.facts)
    if version is None or version < OPENZFS_23:
        return []
    return [Finding(
        "direct_io_always", "warning", f"direct=always on {d.name}",
        f"{d.name} ({role} of {c.data_dir}): direct=always (OpenZFS {_version(ctx.facts)})",
        "PostgreSQL reads and writes its files with buffered I/O and counts on the file"
        " cache (the ARC) behind shared_buffers; it asks for O_DIRECT only under the"
        " developer option debug_io_direct. direct=standard (the default) therefore changes"
        " nothing for it, but direct=always treats every aligned request as direct: reads"
        " bypass the ARC, so each shared_buffers miss goes to disk, and recordsize-aligned"
        " writes skip it too.",
        f"zfs set direct=standard {d.name}",
        f"{src.OPENZFS_ZFSPROPS_DIRECT}; {src.OPENZFS_23_RELEASE}", subject=d.name,
    ) for c, role, d in ctx.pg_datasets() if r.prop(d, "direct") == "always"]


RULES: tuple[tuple[str, Rule], ...] = (
    ("io_method_on_zfs", io_method_on_zfs),
    ("data_checksums_pg18_default", data_checksums_pg18_default),
    ("arc_default_openzfs_23", arc_default_openzfs_23),
    ("direct_io_always", direct_io_always),
)
