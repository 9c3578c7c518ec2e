"""The sample command: one shell script, one SSH round trip, every source of a sample.

Each source runs framed by apps.remote.gather's bundle (named markers and its
exit status, split back by apps.remote.facts.sections). A source the host does
not have prints ABSENT instead of failing, so the parser can tell "not
available on this host" (ABSENT) from "failed this time" (a non-zero status)
from a value:

- kstat files are tested with `[ -r FILE ]`: /proc/spl/kstat/zfs/arcstats,
  /proc/spl/kstat/zfs/dmu_tx and /proc/spl/kstat/zfs/<pool>/txgs exist only
  with OpenZFS's SPL (host-formats.md section 1; module/zfs/spa_stats.c and
  dmu_tx.c); zfs-fuse keeps one file per ARC field under
  /zfs-kstat/zfs/arcstats/ (test-fleet.md), read with `grep -r .`;
- commands are tested with `command -v` (a host whose ZFS or PostgreSQL went
  away since discovery is "not available", not an error);
- /proc/meminfo, /proc/loadavg and /proc/uptime (proc(5)); uptime going down
  tells a reboot, which resets every kernel counter.

Which form each ZFS command takes comes from the SampleSpec (the dialect that
discovery found), and every value is quoted by apps.remote.commands.
"""

from __future__ import annotations

from apps.remote.commands import Command, abs_path, cmd, script
from apps.remote.facts import arc, zfs, zpool
from apps.remote.gather import bundle
from apps.telemetry.core.pgstats import stats_query
from apps.telemetry.core.spec import SampleSpec

# Not "@@pozol@@ ..." (the section markers): a line of its own that no source prints.
ABSENT = "@@pozol:absent@@"
KSTAT_DIR = "/proc/spl/kstat/zfs"
DMU_TX = f"{KSTAT_DIR}/dmu_tx"
SAMPLE_TIMEOUT = 45.0  # psql's own limit is 30 s (apps.remote.cluster)

# Section names; per-pool and per-cluster ones take a suffix.
UPTIME, MEMINFO, LOADAVG, ARCSTATS, DMU_TX_SECTION = "uptime", "meminfo", "loadavg", "arc", "dmu_tx"
ZPOOL_LIST, ZPOOL_STATUS, ZFS_GET = "zpool_list", "zpool_status", "zfs_get"
TXGS_PREFIX, PG_PREFIX = "txgs:", "pg:"
DATASET_PROPERTIES = ("used", "usedbysnapshots", "compressratio")
PROC_UPTIME, PROC_MEMINFO, PROC_LOADAVG = "/proc/uptime", "/proc/meminfo", "/proc/loadavg"


def sample_command(spec: SampleSpec) -> Command:
    probes = sample_probes(spec)
    return Command(bundle(probes).text, shown="telemetry sample: " + ", ".join(probes))


def sample_probes(spec: SampleSpec) -> dict[str, Command]:
    probes = {
        UPTIME: _file(PROC_UPTIME),
        MEMINFO: _file(PROC_MEMINFO),
        LOADAVG: _file(PROC_LOADAVG),
        ARCSTATS: _arcstats(),
        DMU_TX_SECTION: _file(DMU_TX),
    }
    if spec.zfs and spec.pools:
        probes |= {
            ZPOOL_LIST: _if_tool("zpool", zpool_list(spec)),
            ZPOOL_STATUS: _if_tool("zpool", zpool_status(spec)),
            ZFS_GET: _if_tool("zfs", zfs_get(spec)),
            **{TXGS_PREFIX + pool: _file(f"{KSTAT_DIR}/{pool}/txgs") for pool in spec.pools},
        }
    for index, cluster in enumerate(spec.clusters):
        probes[f"{PG_PREFIX}{index}"] = cluster.target.psql(
            stats_query(cluster.server_version_num))
    return probes


def zpool_list_columns(spec: SampleSpec) -> tuple[str, ...]:
    return zpool.list_columns(spec.zpool_fragmentation)  # discovery's columns


def zpool_list(spec: SampleSpec) -> Command:
    return cmd("zpool", "list", "-Hp" if spec.zpool_parsable else "-H",
               "-o", ",".join(zpool_list_columns(spec)), *spec.pools)


def zpool_status(spec: SampleSpec) -> Command:
    # -p: exact error counts (1234, not 1.2K) from OpenZFS 0.8 on; zfs-fuse has no -p.
    return cmd("zpool", "status", *(["-p"] if spec.zpool_status_parsable else []), *spec.pools)


def dataset_properties(spec: SampleSpec) -> tuple[str, ...]:
    return DATASET_PROPERTIES + (("logicalused",) if spec.logicalused else ())


def zfs_get(spec: SampleSpec) -> Command:
    types = ["-t", "filesystem,volume"] if spec.zfs_get_types else []
    return cmd("zfs", "get", "-Hp", "-r", *types, "-o", zfs.GET_FIELDS,
               ",".join(dataset_properties(spec)), *spec.pools)


def _file(path: str) -> Command:
    return script("if [ -r {path} ]; then cat {path}; else echo {absent}; fi",
                  path=abs_path(path), absent=ABSENT)


def _arcstats() -> Command:
    return script("if [ -r {proc} ]; then cat {proc}; "
                  "elif [ -d {fuse} ]; then grep -r . {fuse}; else echo {absent}; fi",
                  proc=arc.PROC_ARCSTATS, fuse=arc.FUSE_ARCSTATS_DIR, absent=ABSENT)


def _if_tool(tool: str, command: Command) -> Command:
    return script("if command -v {tool} >/dev/null; then {command}; else echo {absent}; fi",
                  tool=tool, command=command, absent=ABSENT)
