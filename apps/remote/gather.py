"""Gather what a host is over SSH: OS, memory, ZFS pools and datasets, ARC, disks, PostgreSQL.

`discover(run)` asks in at most four SSH round trips, each a bundle of
read-only commands (apps.remote.facts.sections frames every command's output
and exit status), and hands every output to the pure parsers in
apps.remote.facts:

1. the host: os-release, uname, memory, sysctls, tools present, disks, processes,
   which clusters postgresql-common manages and which PostgreSQL majors are
   installed (a cluster of them running or not);
2. probes: the ZFS dialect, the pool names, NVMe write caches, each postmaster's
   data directory, binary, owner, postmaster.pid and cgroup (its systemd unit);
3. data: pools, datasets and their properties, arcstats, module parameters,
   pg_settings of each cluster, its standbys, replication slots and checkpoint
   counters, its largest databases and whether pg_repack is available;
4. databases (only where a cluster listed one of 32 MiB or more): dead tuples,
   the largest TOAST tables and the columns PostgreSQL compresses in each of
   those databases, one psql session each, since a PostgreSQL session sees the
   statistics and catalogs of its own database only.

A postmaster whose data directory is on a dataset PoZoL made for a clone (the
`pozol:clone` property, read with the other dataset properties) is PoZoL's own
copy: it is listed in `clones`, not among the host's clusters.

Nothing a host prints reaches a later command unless it passed the validators
of apps.remote.commands; what fails is left out and recorded in `skipped`.
A missing tool (no zfs, no nvme-cli, no PostgreSQL) or a command the host's ZFS
dialect lacks is a fact about the host, never an error.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import asdict
from functools import reduce

from apps.common.sizes import MiB
from apps.remote import commands, signed, sudo
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import Command, InvalidValue, cmd, script
from apps.remote.errors import SudoRefused
from apps.remote.facts import arc, bloat, disks, postgres, system, zfs, zpool
from apps.remote.facts.host import (
    CLONE_PROPERTY,
    Cluster,
    Dataset,
    Disk,
    HostFacts,
    Installed,
    Pool,
    ZfsFacts,
    dataset_from,
    pool_from,
    split_clones,
)
from apps.remote.facts.sections import MARKER, Section, split_sections
from apps.remote.shell import Runner

BUNDLE_TIMEOUT = 180.0
DATASET_PROPERTIES = (
    "recordsize", "compression", "compressratio", "atime", "logbias", "primarycache",
    "xattr", "dedup", "usedbysnapshots", CLONE_PROPERTY,
)
# Asked one by one: zfs refuses a whole `get` for one unknown property, and
# zfs-fuse knows none of these; `direct` (Direct I/O) came with OpenZFS 2.3.
OPTIONAL_PROPERTIES = ("sync", "redundant_metadata", "direct")
# Block cloning, a pool feature from OpenZFS 2.2 (pool version 23, zfs-fuse's, has no
# features at all).
BLOCK_CLONING = "feature@block_cloning"
_NVME_DISK = re.compile(r"nvme\d+n\d+\Z")


def discover(run: Runner, login: str = sudo.ROOT) -> HostFacts:
    listing = _sudo_listing(run, login)
    host = ask(run, host_probes())
    facts = _host_facts(host)
    postmasters = postgres.find_postmasters(postgres.parse_ps(_text(host, "ps")))
    has_zfs = {"zfs", "zpool"} <= facts.tools.keys()
    probes = ask(run, {
        **(zfs_probes() if has_zfs else {}),
        **(nvme_probes(facts) if "nvme" in facts.tools else {}),
        **postmaster_probes(postmasters),
    })
    pools = _read_zfs_probes(probes, facts) if has_zfs else []
    if not has_zfs:
        facts.zfs_absent_reason = "no zfs/zpool command on the host (command -v)"
    _read_nvme(probes, facts)
    common = postgres.parse_postgresql_common(_text(host, "pg_common"))
    facts.installed = Installed(postgres.parse_installed(_text(host, "pg_installed")),
                                common.pg_ctlcluster, sorted(common.clusters))
    clusters = [_cluster(pid, probes) for pid in _valid_pids(postmasters)]
    data = ask(run, {
        **(zfs_data_probes(facts.zfs, pools) if facts.zfs else {}),
        **psql_probes(clusters, facts),
    })
    if facts.zfs:
        _read_zfs_data(data, facts, pools)
    facts.clusters, facts.clones = split_clones(
        [_with_layout(_with_settings(c, data, facts), common) for c in clusters],
        facts.datasets)
    _read_bloat(run, data, facts)
    if listing is not None:
        facts.sudo = _sudo_check(login, listing, facts)
    return facts


def discover_cluster(run: Runner, facts: HostFacts, expected: Cluster,
                     parent: str) -> tuple[Cluster, list[Dataset]]:
    """One cluster just started and the datasets of `parent` (it and those below it), read
    in one round trip as discovery reads them: for a cluster PoZoL made
    (apps.provisioning), whose postmaster's pid, port, socket and binaries it knows.

    The postmaster is read as discovery reads it (its /proc, postmaster.pid and cgroup);
    its settings through psql on the port and socket `expected` names. `facts`, the
    host's last discovery, gives the ZFS dialect and the mountpoints of the rest."""
    if facts.zfs is None:
        raise InvalidValue("host facts", None, "no ZFS was discovered on the host")
    seen = dataclasses.replace(facts, datasets=list(facts.datasets), skipped=[])
    data = ask(run, {
        **postmaster_probes([postgres.Process(expected.pid, 1, expected.owner or "", "")]),
        "pg_common": PG_COMMON_PROBE,
        **psql_probes([expected], seen),
        **dataset_probes(facts.zfs, [commands.dataset_name(parent)]),
    })
    below = [d for d in _datasets(data, seen) if under(d.name, parent)]
    if not below:
        raise InvalidValue("datasets", parent, "zfs listed nothing there")
    seen.datasets = [d for d in seen.datasets if not under(d.name, parent)] + below
    common = postgres.parse_postgresql_common(_text(data, "pg_common"))
    found = _with_layout(_with_settings(_cluster(expected.pid, data), data, seen), common)
    return found, below


def dataset_probes(facts: ZfsFacts, roots: list[str]) -> dict[str, Command]:
    """The listing and properties of `roots` (pools or datasets) and every dataset below."""
    fuse = facts.dialect == zfs.ZFS_FUSE
    get = ["zfs", "get", "-Hp", "-r", *([] if fuse else ["-t", "filesystem,volume"]),
           "-o", zfs.GET_FIELDS]
    return {
        "zfs_list": cmd("zfs", "list", "-Hp" if facts.capabilities.list_parsable else "-H",
                        "-r", "-t", "filesystem,volume", "-o", ",".join(zfs.LIST_FIELDS),
                        *roots),
        "zfs_get": cmd(*get, ",".join(DATASET_PROPERTIES), *roots),
        **{f"zfs_get_{prop}": cmd(*get, prop, *roots) for prop in OPTIONAL_PROPERTIES},
    }


def under(name: str, parent: str) -> bool:
    """Whether dataset `name` is `parent` or below it."""
    return name == parent or name.startswith(parent + "/")


# -- a login other than root: its sudoers rules ---------------------------------

def _sudo_listing(run: Runner, login: str) -> SudoListing | None:
    """`sudo -n -l` as the login itself, and the helper it runs as root; refused at once
    when the `run` rule or the helper (apps.remote.signed), which every later round trip
    needs, is missing (the error names what to install)."""
    if login == sudo.ROOT:
        return None
    asked = bundle({"sudo_list": cmd(*sudo.LIST_COMMAND),
                    "helper": script("head -n 3 {path}", path=signed.HELPER_PATH)})
    sections = split_sections(run(dataclasses.replace(
        asked, as_login=True, shown="sudo -n -l  (the login's sudoers rules and helper)"),
        timeout=30, check=False).stdout)
    listed = sections.get("sudo_list") or Section("sudo_list", -1, "no answer")
    found = SudoListing(listed.exit_code, listed.text)
    needed = found.check(login, [r for r in sudo.rules() if r.name == "run"])
    if not needed.ok and any(m["rule"] == "run" for m in needed.missing):
        raise SudoRefused(
            f"sudo does not let {login} run PoZoL's commands"
            f"{f' ({needed.refused})' if needed.refused else ''}; missing: "
            + "; ".join(m["line"] for m in needed.missing), rule="run")
    version = signed.installed_version(_text(sections, "helper"))
    if version != signed.HELPER_VERSION:
        state = "missing" if version is None else f"version {version}, not {signed.HELPER_VERSION}"
        raise SudoRefused(
            f"the helper {signed.HELPER_PATH} that {login} runs as root is {state}: install "
            "the one GET /api/hosts/<id>/sudoers/ gives (root, mode 0755)", rule="run")
    return found


@dataclasses.dataclass(frozen=True)
class SudoListing:
    exit_code: int
    text: str  # stdout and stderr together

    def check(self, login: str, needed: list[sudo.Rule]) -> sudo.SudoCheck:
        return sudo.check(login, self.exit_code, self.text, self.text, needed)


def _sudo_check(login: str, listing: SudoListing, facts: HostFacts) -> sudo.SudoCheck:
    clusters = []
    for cluster in facts.clusters:
        try:
            clusters.append(sudo.Cluster(cluster.owner or "", cluster.bin_dir or ""))
        except InvalidValue as exc:
            facts.skip("sudoers rule of cluster", cluster.data_dir, exc.reason)
    # A major installed with no cluster yet: the rule a new cluster of it will need.
    for major, (bin_dir, owner) in sorted(facts.majors().items()):
        try:
            clusters.append(sudo.Cluster(owner, bin_dir))
        except InvalidValue as exc:
            facts.skip("sudoers rule of PostgreSQL", major, exc.reason)
    return listing.check(login, sudo.rules(clusters))


# -- bundling ---------------------------------------------------------------

def bundle(probes: dict[str, Command]) -> Command:
    """One shell script running every probe, each framed by named markers."""
    framed = [
        script("echo {begin}; {{ {probe}; }} </dev/null 2>&1; printf {end} \"$?\"",
               begin=f"{MARKER} {name}", probe=probe, end=f"\\n{MARKER} rc=%s\\n")
        for name, probe in probes.items()
    ]
    whole = reduce(lambda first, second: script("{a}; {b}", a=first, b=second), framed)
    # The log names what was read; the framing script is in the worker's debug log.
    return Command(whole.text, shown=f"read facts: {', '.join(probes)}")


def ask(run: Runner, probes: dict[str, Command]) -> dict[str, Section]:
    if not probes:
        return {}
    result = run(bundle(probes), timeout=BUNDLE_TIMEOUT, check=False)
    return split_sections(result.stdout)


def _text(sections: dict[str, Section], name: str) -> str:
    section = sections.get(name)
    return section.text if section else ""


def _ok(sections: dict[str, Section], name: str) -> bool:
    section = sections.get(name)
    return bool(section and section.ok)


# -- round 1: the host --------------------------------------------------------

def host_probes() -> dict[str, Command]:
    return {
        "os_release": cmd("cat", "/etc/os-release"),
        "uname_r": cmd("uname", "-r"),
        "uname_m": cmd("uname", "-m"),
        "nproc": cmd("nproc"),
        "meminfo": cmd("cat", "/proc/meminfo"),
        "sysctl": cmd("sysctl", *system.VM_SYSCTLS),
        # sd_booted(3): this directory exists only when systemd is PID 1.
        "systemd": cmd("test", "-d", "/run/systemd/system"),
        # dash's `command -v` answers for its first operand only: ask one by one. pv and
        # mbuffer decide whether replication can apply a bandwidth limit; they come before
        # runuser so the probe's status stays that of the last tool a host always has.
        "tools": script("for tool in zfs zpool nvme pv mbuffer lsblk runuser; "
                        "do command -v \"$tool\"; done"),
        "lsblk": script("lsblk -J -b -o {cols} || lsblk -P -b -o {cols}",
                        cols=disks.LSBLK_COLUMNS),
        "write_cache": script("grep -H . /sys/block/*/queue/write_cache"),
        "thp_enabled": cmd("cat", f"{system.THP_DIR}/enabled"),
        "thp_defrag": cmd("cat", f"{system.THP_DIR}/defrag"),
        "ps": cmd("ps", "-eo", "pid,ppid,user,args"),
        # Asked of every host, a cluster running or not: what a new one can be made with.
        "pg_common": PG_COMMON_PROBE,
        "pg_installed": INSTALLED_PROBE,
    }


def _host_facts(host: dict[str, Section]) -> HostFacts:
    meminfo = system.parse_meminfo(_text(host, "meminfo"))
    facts = HostFacts(
        os=system.parse_os_release(_text(host, "os_release")),
        kernel=system.parse_single_line(_text(host, "uname_r")),
        arch=system.parse_single_line(_text(host, "uname_m")),
        cpus=system.parse_int(_text(host, "nproc")),
        mem_total=meminfo.get("MemTotal"),
        mem_dirty=meminfo.get("Dirty"),
        mem_writeback=meminfo.get("Writeback"),
        sysctls=system.parse_sysctls(_text(host, "sysctl")),
        has_systemd=_ok(host, "systemd"),
        tools=system.parse_tools(_text(host, "tools")),
        thp_enabled=_thp(host, "thp_enabled"),
        thp_defrag=_thp(host, "thp_defrag"),
    )
    facts.disks = _disks(host)
    return facts


def _thp(host: dict[str, Section], name: str) -> str | None:
    return system.parse_bracketed(_text(host, name)) if _ok(host, name) else None


def _disks(host: dict[str, Section]) -> list[Disk]:
    text = _text(host, "lsblk")
    devices = (disks.parse_lsblk_json if text.lstrip().startswith("{")
               else disks.parse_lsblk_pairs)(text)
    caches = disks.parse_write_cache(_text(host, "write_cache"))
    return [Disk(**asdict(d), write_cache=caches.get(d.name))
            for d in devices if d.type not in {"loop", "rom"}]


# -- round 2: probes -------------------------------------------------------------

def zfs_probes() -> dict[str, Command]:
    return {
        "zfs_version": cmd("zfs", "version"),
        "zfs_kmod": cmd("cat", "/sys/module/zfs/version"),
        # Cheap on purpose: volumes are few; only whether -p is accepted matters.
        "zfs_list_p": cmd("zfs", "list", "-Hp", "-o", "name", "-t", "volume"),
        "zpool_list_p": cmd("zpool", "list", "-Hp", "-o", "name"),
        "zpool_names": cmd("zpool", "list", "-H", "-o", "name"),
    }


def nvme_probes(facts: HostFacts) -> dict[str, Command]:
    probes = {}
    for disk in facts.disks:
        if disk.transport != "nvme" or disk.type != "disk":
            continue
        if _NVME_DISK.match(disk.name):
            probes[f"nvme:{disk.name}"] = cmd("nvme", "get-feature", "-f", "6", f"/dev/{disk.name}")
        else:
            facts.skip("nvme disk", disk.name, "not an NVMe namespace name (nvmeXnY)")
    return probes


def postmaster_probes(postmasters: list[postgres.Process]) -> dict[str, Command]:
    # A postmaster runs with its data directory as working directory, so
    # /proc/PID/cwd finds it whatever -D, PGDATA or config_file said.
    probes = {}
    for pid in _valid_pids(postmasters):
        proc = f"/proc/{pid}"
        probes |= {
            f"pg:{pid}:cwd": cmd("readlink", "-f", f"{proc}/cwd"),
            f"pg:{pid}:exe": cmd("readlink", "-f", f"{proc}/exe"),
            f"pg:{pid}:owner": cmd("stat", "-L", "-c", "%U", f"{proc}/cwd"),
            f"pg:{pid}:pidfile": cmd("cat", f"{proc}/cwd/postmaster.pid"),
            f"pg:{pid}:version": cmd("cat", f"{proc}/cwd/PG_VERSION"),
            f"pg:{pid}:wal": cmd("readlink", "-f", f"{proc}/cwd/pg_wal"),
            # Names the postgresql@ unit when systemd runs the cluster.
            f"pg:{pid}:cgroup": cmd("cat", f"{proc}/cgroup"),
        }
    return probes


# Whether postgresql-common could start a cluster: its pg_ctlcluster, and the clusters
# whose /etc/postgresql/<major>/<name>/ has the start.conf pg_createcluster writes.
PG_COMMON_PROBE = script("command -v pg_ctlcluster; ls -1d /etc/postgresql/*/*/start.conf")
# Each packaged major's initdb (Debian's layout, then the PGDG RPMs'); an unmatched glob
# stays literal and fails the test, so the probe prints only what exists.
INSTALLED_PROBE = script("for f in /usr/lib/postgresql/*/bin/initdb /usr/pgsql-*/bin/initdb; "
                         "do [ ! -x \"$f\" ] || echo \"$f\"; done")


def _valid_pids(postmasters: list[postgres.Process]) -> list[int]:
    return [p.pid for p in postmasters if p.pid > 1]


def _read_zfs_probes(probes: dict[str, Section], facts: HostFacts) -> list[str]:
    version = zfs.parse_zfs_version(_text(probes, "zfs_version"))
    # Only the old dialect lacks the command; any other failure is not a dialect.
    if not _ok(probes, "zfs_version") and zfs.is_unknown_command(_text(probes, "zfs_version")):
        dialect = zfs.ZFS_FUSE
    elif version.userland or _ok(probes, "zfs_kmod"):
        dialect = zfs.OPENZFS
    else:
        reason = _first_line(_text(probes, "zfs_version"))
        facts.zfs_absent_reason = f"zfs version failed: {reason}"
        return []
    facts.zfs = _zfs_facts(dialect, version, probes)
    return _valid_pools(_text(probes, "zpool_names"), facts)


def _zfs_facts(dialect: str, version: zfs.ZfsVersion, probes: dict[str, Section]) -> ZfsFacts:
    kernel = version.kernel or _line_if_ok(probes, "zfs_kmod")
    version = zfs.ZfsVersion(version.userland, kernel)
    refused = _text(probes, "zpool_list_p")
    caps = zfs.with_observed(
        zfs.baseline_capabilities(dialect, version),
        version_command=_ok(probes, "zfs_version"),
        list_parsable=_ok(probes, "zfs_list_p"),
        zpool_list_parsable=_ok(probes, "zpool_list_p"),
        **({"zpool_fragmentation": "fragmentation" in zfs.usage_properties(refused)}
           if not _ok(probes, "zpool_list_p") else {}),
    )
    return ZfsFacts(
        implementation="zfs-fuse" if dialect == zfs.ZFS_FUSE else "OpenZFS",
        dialect=dialect,
        version=kernel or version.userland,
        userland_version=version.userland,
        kernel_version=kernel,
        capabilities=caps,
    )


def _valid_pools(text: str, facts: HostFacts) -> list[str]:
    names = [line.strip() for line in text.splitlines()]
    return [name for name in names if name and name != "no pools available"
            and _valid(facts, "pool", name, commands.pool_name)]


def _valid(facts: HostFacts, kind: str, value: str, validator) -> bool:
    try:
        validator(value)
    except InvalidValue as error:
        facts.skip(kind, value, error.reason)
        return False
    return True


def _read_nvme(probes: dict[str, Section], facts: HostFacts) -> None:
    for disk in facts.disks:
        section = probes.get(f"nvme:{disk.name}")
        if section:
            disk.volatile_write_cache = disks.parse_nvme_vwc(section.text, section.exit_code)


def _cluster(pid: int, probes: dict[str, Section]) -> Cluster:
    pidfile = postgres.parse_postmaster_pid(_text(probes, f"pg:{pid}:pidfile"))
    exe = system.parse_single_line(_text(probes, f"pg:{pid}:exe")).removesuffix(" (deleted)")
    return Cluster(
        pid=pid,
        version=system.parse_single_line(_text(probes, f"pg:{pid}:version")) or None,
        server_version_num=None,
        port=pidfile.port,
        data_dir=system.parse_single_line(_text(probes, f"pg:{pid}:cwd")) or pidfile.data_dir,
        wal_dir=_line_if_ok(probes, f"pg:{pid}:wal"),
        socket_dir=pidfile.socket_dir,
        bin_dir=exe.rsplit("/", 1)[0] if exe.startswith("/") else None,
        owner=_line_if_ok(probes, f"pg:{pid}:owner"),
        data_checksums=None,
        systemd_unit=postgres.parse_cgroup_unit(_text(probes, f"pg:{pid}:cgroup")),
        error=None if _ok(probes, f"pg:{pid}:pidfile") else "postmaster.pid unreadable",
    )


def _line_if_ok(sections: dict[str, Section], name: str) -> str | None:
    if not _ok(sections, name):
        return None
    return system.parse_single_line(_text(sections, name)) or None


# -- round 3: data ---------------------------------------------------------------

def zfs_data_probes(facts: ZfsFacts, pools: list[str]) -> dict[str, Command]:
    caps, fuse = facts.capabilities, facts.dialect == zfs.ZFS_FUSE
    probes = {
        "arcstats": cmd("grep", "-r", ".", arc.FUSE_ARCSTATS_DIR) if fuse
        else cmd("cat", arc.PROC_ARCSTATS),
        "module_params": cmd("grep", "-r", ".", arc.MODULE_PARAMS_DIR),
    }
    if not pools:
        return probes
    columns = zpool.list_columns(caps.zpool_fragmentation)
    exact = "-Hp" if caps.zpool_list_parsable else "-H"
    return probes | {
        "zpool_list": cmd("zpool", "list", exact, "-o", ",".join(columns), *pools),
        "zpool_get": cmd("zpool", "get", *([] if fuse else ["-Hp"]), "ashift,version", *pools),
        # Separate: a ZFS without autotrim (before 0.8, zfs-fuse) refuses the whole list.
        **({} if fuse else {"zpool_get_autotrim": cmd("zpool", "get", "-Hp", "autotrim",
                                                      *pools),
                            "zpool_get_block_cloning": cmd("zpool", "get", "-Hp",
                                                           BLOCK_CLONING, *pools)}),
        "zpool_status": cmd("zpool", "status", *pools),
        **dataset_probes(facts, pools),
    }


def _read_zfs_data(data: dict[str, Section], facts: HostFacts, pools: list[str]) -> None:
    assert facts.zfs is not None
    _observe_zfs(data, facts.zfs)
    params = data.get("module_params")
    facts.module_params = arc.parse_module_params(params.text) if params and params.ok else None
    stats = _arcstats(data, facts.zfs.dialect)
    facts.arcstats = arc.summarize_arc(stats) if stats else None
    facts.pools = _pools(data, facts.zfs.capabilities, pools)
    facts.datasets = _datasets(data, facts)
    if not all(p.exact_sizes for p in facts.pools) or not all(
            d.exact_sizes for d in facts.datasets):
        facts.notes.append("sizes converted from human units (1024-based, rounded): "
                           "the host's zfs/zpool list has no -p")


def _observe_zfs(data: dict[str, Section], zfs_facts: ZfsFacts) -> None:
    sync, redundant = data.get("zfs_get_sync"), data.get("zfs_get_redundant_metadata")
    observed: dict[str, object] = {"module_params": _ok(data, "module_params")}
    if sync and not sync.ok and zfs.is_invalid_property(sync.text, "sync"):
        observed["sync_property"] = False
        # zfs prints its property table after refusing: it names the algorithms it has.
        observed["compression"] = zfs.usage_values(sync.text, "compression") or None
    if redundant and not redundant.ok and zfs.is_invalid_property(
            redundant.text, "redundant_metadata"):
        observed["redundant_metadata_property"] = False
    observed = {key: value for key, value in observed.items() if value is not None}
    zfs_facts.capabilities = zfs.with_observed(zfs_facts.capabilities, **observed)


def _arcstats(data: dict[str, Section], dialect: str) -> dict[str, int]:
    if not _ok(data, "arcstats"):
        return {}
    text = _text(data, "arcstats")
    if dialect == zfs.ZFS_FUSE:
        return arc.parse_arcstats_files(text)
    return arc.parse_arcstats_proc(text)


def _pools(data: dict[str, Section], caps: zfs.Capabilities, names: list[str]) -> list[Pool]:
    columns = zpool.list_columns(caps.zpool_fragmentation)
    rows = zpool.parse_zpool_list(_text(data, "zpool_list"), columns)
    status = zpool.parse_zpool_status(_text(data, "zpool_status"))
    ashift = zpool.parse_zpool_get(_text(data, "zpool_get"), "ashift")
    spa = zpool.parse_zpool_get(_text(data, "zpool_get"), "version")
    trim = zpool.parse_zpool_get(_text(data, "zpool_get_autotrim"), "autotrim") \
        if _ok(data, "zpool_get_autotrim") else {}
    cloning = zpool.parse_zpool_get(_text(data, "zpool_get_block_cloning"), BLOCK_CLONING) \
        if _ok(data, "zpool_get_block_cloning") else {}
    return [pool_from(row, status.get(row.name), ashift.get(row.name), spa.get(row.name),
                      autotrim=trim.get(row.name), block_cloning=cloning.get(row.name))
            for row in rows if row.name in names]


def _datasets(data: dict[str, Section], facts: HostFacts) -> list[Dataset]:
    props = zfs.parse_zfs_get(_text(data, "zfs_get"))
    for prop in OPTIONAL_PROPERTIES:
        if _ok(data, f"zfs_get_{prop}"):
            for name, values in zfs.parse_zfs_get(_text(data, f"zfs_get_{prop}")).items():
                props.setdefault(name, {}).update(values)
    return [
        dataset_from(row, props.get(row.name, {}))
        for row in zfs.parse_zfs_list(_text(data, "zfs_list"))
        if _valid(facts, "dataset", row.name, commands.dataset_name)
    ]


def psql_probes(clusters: list[Cluster], facts: HostFacts) -> dict[str, Command]:
    probes = {}
    for cluster in clusters:
        try:
            probes[f"psql:{cluster.pid}"] = _psql(cluster)
            probes[f"psql:{cluster.pid}:stats"] = _psql(
                cluster, postgres.stats_query(postgres.major_of(cluster.version)))
            probes[f"psql:{cluster.pid}:databases"] = _psql(cluster, bloat.LISTING_QUERY)
        except InvalidValue as error:
            facts.skip("postgres cluster", cluster.data_dir, f"{error.kind}: {error.reason}")
            cluster.error = f"not queried: invalid {error.kind} {error.value!r}"
    return probes


def _psql(cluster: Cluster, sql: str = postgres.SETTINGS_QUERY,
          database: str | None = None) -> Command:
    target = ClusterTarget(owner=cluster.owner, bin_dir=cluster.bin_dir,
                           socket_dir=cluster.socket_dir, port=cluster.port)
    return target.psql(sql, database=database)


def _with_settings(cluster: Cluster, data: dict[str, Section], facts: HostFacts) -> Cluster:
    section = data.get(f"psql:{cluster.pid}")
    if section and section.ok:
        cluster.settings = postgres.parse_settings(section.text)
        version_num = postgres.setting_value(cluster.settings, "server_version_num")
        cluster.server_version_num = int(version_num) if version_num else None
        cluster.data_checksums = postgres.setting_value(cluster.settings, "data_checksums") == "on"
    elif section:
        cluster.error = "psql failed: " + _first_line(section.text)
    stats = data.get(f"psql:{cluster.pid}:stats")
    # A failed stats query (a view this server lacks) leaves them unknown, not an error.
    cluster.stats = postgres.parse_stats(stats.text) if stats and stats.ok else None
    mountpoints = {d.name: d.mountpoint for d in facts.datasets if d.mountpoint}
    cluster.data_dataset = postgres.dataset_for_path(cluster.data_dir, mountpoints)
    cluster.wal_dataset = postgres.dataset_for_path(cluster.wal_dir, mountpoints)
    return cluster


def _with_layout(cluster: Cluster, common: postgres.PostgresqlCommon) -> Cluster:
    """Where its configuration lives and who starts it: systemd's unit, postgresql-common."""
    for name in ("config_file", "hba_file", "ident_file"):
        setattr(cluster, name, postgres.setting_value(cluster.settings, name) or None)
    packaged = postgres.debian_cluster(cluster.config_file)
    cluster.packaged = "/".join(packaged) if packaged else None
    cluster.pg_ctlcluster = common.manages(packaged)
    return cluster


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:200] if lines else "(no output)"


# -- round 4: dead tuples and TOAST per database ---------------------------------

def _read_bloat(run: Runner, data: dict[str, Section], facts: HostFacts) -> None:
    listings = {c.pid: listing for c in facts.clusters
                if _ok(data, f"psql:{c.pid}:databases")
                and (listing := bloat.parse_listing(_text(data, f"psql:{c.pid}:databases")))}
    probes: dict[str, Command] = {}
    refused: dict[int, dict[str, str]] = {}
    for cluster in facts.clusters:
        if cluster.pid in listings:
            found, refused[cluster.pid] = database_probes(cluster, listings[cluster.pid], facts)
            probes |= found
    answers = ask(run, probes)
    for cluster in facts.clusters:
        if cluster.pid in listings:
            cluster.bloat = _cluster_bloat(cluster, listings[cluster.pid], answers,
                                           refused[cluster.pid])


def database_probes(cluster: Cluster, listing: bloat.Listing,
                    facts: HostFacts) -> tuple[dict[str, Command], dict[str, str]]:
    """TABLES_QUERY in each listed database large enough to matter and whose name the
    naming rules accept (a name reaches psql's command line); the others are left out
    with the reason."""
    probes, refused = {}, {}
    for name, size in listing.largest:
        try:
            command = _psql(cluster, bloat.TABLES_QUERY, name)
        except InvalidValue as error:
            facts.skip("postgres database", f"{cluster.data_dir}: {name}", error.reason)
            refused[name] = f"not queried, {error.reason}"
            continue
        if size is not None and size < bloat.SMALLEST_DATABASE:
            refused[name] = (f"not queried, {size // MiB} MiB: too small to hold"
                             f" {bloat.SMALLEST_DATABASE // MiB} MiB of dead rows")
        else:
            probes[f"psql:{cluster.pid}:db:{name}"] = command
    return probes, refused


def _cluster_bloat(cluster: Cluster, listing: bloat.Listing, answers: dict[str, Section],
                   refused: dict[str, str]) -> bloat.ClusterBloat:
    read, not_read = [], []
    for name, size in listing.largest:
        section = answers.get(f"psql:{cluster.pid}:db:{name}")
        found = bloat.parse_tables(name, size, section.text) if section and section.ok else None
        if found is not None:
            read.append(found)
        else:
            why = refused.get(name) or (_error_line(section.text) if section else "no answer")
            not_read.append(f"{name}: {why}")
    return bloat.ClusterBloat(databases=listing.databases, read=read,
                              pg_repack_available=listing.pg_repack_available,
                              not_read=not_read)


def _error_line(text: str) -> str:
    """Why a database was not read: TABLES_QUERY's SET tag comes before any error."""
    return _first_line("\n".join(line for line in text.splitlines() if line.strip() != "SET"))
