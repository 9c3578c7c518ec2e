"""Tuning profiles: what a host should look like, layer by layer, and the built-ins.

A profile names values per layer; a value may be a formula of host facts
(apps.tuning.core.formulas), so one profile fits a 4GB clone host and a 256GB
server. from_dict() validates everything a profile could carry into a command
line, so a stored or user-written profile is checked before any plan exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from apps.remote.facts.numbers import is_digits
from apps.tuning.core import formulas as f
from apps.tuning.core import pgsettings
from apps.tuning.core import sources as src
from apps.tuning.core.facts import ROLES
from apps.tuning.core.formulas import FormulaError

LAYERS = ("zfs", "module", "sysctl", "postgres")
# Risks an operator must acknowledge, by id, before a plan that carries them applies.
RISKS = {
    "bounded_loss": "up to about one second of committed transactions (a few ZFS transaction"
                    " groups under heavy writes) can be lost on a crash or power loss",
    "unsafe_fsync": "fsync=off: an operating-system crash or power loss can corrupt the cluster",
}
ZFS_VALUES = {
    "atime": ("on", "off"),
    "logbias": ("latency", "throughput"),
    "primarycache": ("all", "none", "metadata"),
    "xattr": ("on", "off", "sa", "dir"),
    "redundant_metadata": ("all", "most", "some", "none"),
    "sync": ("standard", "always", "disabled"),
}
ZFS_PROPERTIES = ("recordsize", "compression", *ZFS_VALUES)
# "The value the newest finished experiment on this host named the winner": resolved per
# host and dataset by the service (apps/tuning/evidence.py), never by a guess. Only for the
# properties an experiment varies on the datasets it runs on.
EXPERIMENT = "experiment"
DECIDED_BY_EXPERIMENT = ("recordsize",)
EXPERIMENT_ROLES = ("data", "wal")
_COMPRESSION = re.compile(r"(on|off|lz4|lzjb|zle|gzip(-[1-9])?|zstd(-([1-9]|1[0-9]))?"
                          r"|zstd-fast(-\d+)?)\Z")
_MODULE_PARAM = re.compile(r"zfs_[a-z0-9_]+\Z")
# The sysctls PoZoL reads back after writing (discovery's VM_SYSCTLS), with the
# kernel's accepted range: (minimum, maximum or None). Others cannot be verified.
SYSCTLS: dict[str, tuple[int, int | None]] = {
    "vm.dirty_bytes": (2 * 4096, None),  # the kernel refuses less than two pages
    "vm.dirty_background_bytes": (1, None),
    "vm.dirty_ratio": (1, 100),
    "vm.dirty_background_ratio": (1, 100),
    "vm.overcommit_memory": (0, 2),
    "vm.overcommit_ratio": (0, None),
    "vm.swappiness": (0, 200),
    "vm.nr_hugepages": (0, None),
}
# ZFS module parameters with a known range; any other zfs_* takes a non-negative number.
MODULE_RANGES: dict[str, tuple[int, int | None]] = {
    "zfs_arc_max": (64 * f.MiB, None),  # below 64MB OpenZFS silently ignores it
    "zfs_arc_min": (32 * f.MiB, None),
    "zfs_txg_timeout": (1, 3600),
    "zfs_dirty_data_max": (1, None),
    "zfs_dmu_offset_next_sync": (0, 1),
    "zfs_bclone_enabled": (0, 1),
}
MAX_NAME = 128
_SYSCTL = re.compile(r"vm\.[a-z0-9_]+\Z")
_PG_SETTING = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?\Z")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")
# Linux keeps one member of each pair: writing one makes the other read 0.
SYSCTL_PAIRS = (("vm.dirty_bytes", "vm.dirty_ratio"),
                ("vm.dirty_background_bytes", "vm.dirty_background_ratio"))
# Each member to its partner: restoring one may mean writing the other.
SYSCTL_COUNTERPART = {a: b for pair in SYSCTL_PAIRS for a, b in (pair, pair[::-1])}


@dataclass(frozen=True)
class ProfileSettings:
    zfs: dict[str, dict[str, str]]  # dataset role -> {property: value}; roles: data, wal, other
    module: dict[str, str]  # ZFS module parameter -> value/formula
    sysctl: dict[str, str]  # vm.* -> value/formula
    postgres: dict[str, str]  # setting -> value/formula
    requires_acknowledgement: tuple[str, ...] = ()  # risk ids the operator must acknowledge

    def to_dict(self) -> dict:
        return {
            "zfs": {role: dict(props) for role, props in self.zfs.items()},
            "module": dict(self.module), "sysctl": dict(self.sysctl),
            "postgres": dict(self.postgres),
            "requires_acknowledgement": list(self.requires_acknowledgement),
        }

    @classmethod
    def from_dict(cls, d: dict) -> ProfileSettings:
        if not isinstance(d, dict):
            raise ValueError("profile settings must be a mapping of layers")
        unknown = set(d) - {*LAYERS, "requires_acknowledgement"}
        if unknown:
            raise ValueError(f"unknown layer {sorted(unknown)[0]!r}: a profile has "
                             f"{', '.join(LAYERS)} and requires_acknowledgement")
        return cls(
            zfs=_zfs_layer(d.get("zfs") or {}),
            module=_module_layer(d.get("module") or {}),
            sysctl=_sysctl_layer(d.get("sysctl") or {}),
            postgres=_postgres_layer(d.get("postgres") or {}),
            requires_acknowledgement=_risks(d.get("requires_acknowledgement") or ()),
        )


def _zfs_layer(layer: dict) -> dict[str, dict[str, str]]:
    _mapping("zfs", layer)
    result = {}
    for role, props in layer.items():
        if role not in ROLES:
            raise ValueError(f"zfs: unknown dataset role {role!r} (roles: {', '.join(ROLES)})")
        _mapping(f"zfs.{role}", props)
        result[role] = {name: _zfs_value(role, name, value) for name, value in props.items()}
    return result


def _zfs_value(role: str, name: str, value: object) -> str:
    where = f"zfs.{role}.{name}"
    if name not in ZFS_PROPERTIES:
        raise ValueError(f"{where}: not a property a profile may set "
                         f"({', '.join(ZFS_PROPERTIES)})")
    if name in DECIDED_BY_EXPERIMENT and _is_experiment(value):
        if role not in EXPERIMENT_ROLES:
            raise ValueError(f"{where}: {EXPERIMENT!r} only on the data or wal role, the "
                             "datasets experiments run on")
        return EXPERIMENT
    text = _value(where, value)
    if name in ZFS_VALUES and text not in ZFS_VALUES[name]:
        raise ValueError(f"{where}: {text!r} is not one of {', '.join(ZFS_VALUES[name])}")
    if name == "compression" and not _COMPRESSION.match(text):
        raise ValueError(f"{where}: {text!r} is not a ZFS compression algorithm")
    if name == "recordsize":
        _recordsize(where, text)
    return text


def _is_experiment(value: object) -> bool:
    return isinstance(value, str) and value.strip().lower() == EXPERIMENT


def _recordsize(where: str, text: str) -> None:
    trouble = recordsize_problem(text)
    if trouble:
        raise ValueError(f"{where}: {trouble}, or {EXPERIMENT!r} (what the newest finished"
                         " recordsize experiment on each host named the winner)")


def recordsize_problem(text: str) -> str | None:
    """Why `text` is not a recordsize a profile may set; None when it is."""
    size = f.parse_zfs_size(text)
    if size is None or size < 512 or size > 16 * f.MiB or size & (size - 1):
        return f"{text!r} is not a power of two from 512 to 16M"
    return None


def _sysctl_layer(layer: dict) -> dict[str, str]:
    result = _layer("sysctl", layer, _SYSCTL, "vm.<name>")
    for key, value in result.items():
        if key not in SYSCTLS:
            raise ValueError(f"sysctl: PoZoL does not manage {key} (it manages "
                             f"{', '.join(SYSCTLS)})")
        _host_wide_constant(f"sysctl.{key}", value, SYSCTLS[key])
    for pair in SYSCTL_PAIRS:
        if set(pair) <= set(result):
            raise ValueError(f"sysctl: set {pair[0]} or {pair[1]}, not both: the kernel keeps"
                             " only the one written last")
    return result


def _module_layer(layer: dict) -> dict[str, str]:
    result = _layer("module", layer, _MODULE_PARAM, "zfs_<name>")
    for key, value in result.items():
        _host_wide_constant(f"module.{key}", value, MODULE_RANGES.get(key, (0, None)))
    return result


def _postgres_layer(layer: dict) -> dict[str, str]:
    result = _layer("postgres", layer, _PG_SETTING, "a PostgreSQL setting name")
    for key, value in result.items():
        if not pgsettings.known(key):
            raise ValueError(f"postgres.{key}: no such setting in PostgreSQL"
                             f" {pgsettings.spans()}{pgsettings.suggestion(key)}")
        # No host yet: any supported major's reading will do; the plan checks the host's.
        constant = _constant(f"postgres.{key}", value)
        trouble = pgsettings.problem_in_any(key, constant) if constant is not None else None
        if trouble:
            raise ValueError(f"postgres.{key}: {trouble}")
    return result


def _constant(where: str, value: str) -> int | str | None:
    try:
        return f.constant(value)
    except FormulaError as error:
        raise ValueError(f"{where}: {error}") from None


def host_wide_problem(value: int | str, limits: tuple[int, int | None]) -> str | None:
    """Why a resolved sysctl or module parameter value is refused; None when fine."""
    text = str(value).strip()
    if isinstance(value, str) and not is_digits(text.lstrip("-")):
        return f"{text!r} is not a whole number"
    number, (low, high) = int(text), limits
    if number < low:
        return f"{number} is below the minimum, {low}"
    if high is not None and number > high:
        return f"{number} is above the maximum, {high}"
    return None


def _host_wide_constant(where: str, value: str, limits: tuple[int, int | None]) -> None:
    constant = _constant(where, value)
    trouble = host_wide_problem(constant, limits) if constant is not None else None
    if trouble:
        raise ValueError(f"{where}: {trouble}")


def _layer(name: str, layer: dict, pattern: re.Pattern[str], shape: str) -> dict[str, str]:
    _mapping(name, layer)
    result = {}
    for key, value in layer.items():
        if not isinstance(key, str) or len(key) > MAX_NAME or not pattern.match(key):
            raise ValueError(f"{name}: {key!r} is not {shape}")
        result[key] = _value(f"{name}.{key}", value)
    return result


def _value(where: str, value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{where}: a value must be text or a number, got {value!r}")
    text = str(value).strip()
    if not text or _UNSAFE.search(text):
        raise ValueError(f"{where}: empty value or control characters")
    if _is_experiment(text):
        raise ValueError(f"{where}: {EXPERIMENT!r} (the winner of this host's newest"
                         f" experiment) is only for {', '.join(DECIDED_BY_EXPERIMENT)} on the"
                         " data or wal dataset; give a value here")
    try:
        f.check(text)
    except FormulaError as error:
        raise ValueError(f"{where}: {error}") from None
    return text


def _mapping(where: str, value: object) -> None:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a mapping, got {type(value).__name__}")


def _risks(values: object) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, list | tuple):
        raise ValueError("requires_acknowledgement: expected a list of risk ids")
    for risk in values:
        if risk not in RISKS:
            raise ValueError(f"requires_acknowledgement: unknown risk {risk!r} "
                             f"(known: {', '.join(RISKS)})")
    return tuple(values)


@dataclass(frozen=True)
class BuiltinProfile:
    slug: str
    name: str
    description: str
    settings: ProfileSettings
    citations: tuple[str, ...] = field(default=())  # "Title — Author: the fact used"


# -- the built-ins -----------------------------------------------------------------------------

_PG_ON_ZFS = {
    # ZFS is copy-on-write and never writes a partial record: no torn pages to repair.
    "full_page_writes": "off",
    # ZFS never overwrites in place, so zero-filling or recycling WAL files buys nothing.
    "wal_init_zero": "off",
    "wal_recycle": "off",
}
_PGTUNE_MEMORY = {
    "shared_buffers": f.SHARED_BUFFERS,
    "effective_cache_size": f.EFFECTIVE_CACHE_SIZE,
    "work_mem": f.WORK_MEM,
    "maintenance_work_mem": f.MAINTENANCE_WORK_MEM,
    "wal_buffers": f.WAL_BUFFERS,
}
_HOST_MEMORY = {"zfs_arc_max": f.ZFS_ARC_MAX}
_DIRTY = {"vm.dirty_bytes": f.DIRTY_BYTES, "vm.dirty_background_bytes": f.DIRTY_BACKGROUND_BYTES}
# PGTune's planner costs per storage kind: random reads cost little more than sequential
# ones on solid state, and it serves many requests at once.
_STORAGE_COSTS = {
    "effective_io_concurrency": "2 if disk == 'hdd' else (1000 if disk == 'nvme' else 200)",
    "random_page_cost": "4 if disk == 'hdd' else 1.1",
}
_COMMON = {"atime": "off", "logbias": "latency", "primarycache": "all"}

_ZFS_FACTS = (
    f"{src.PG_PHRIDAY_ZFS}: full_page_writes=off gave nearly +70% TPS and 160MB instead of"
    " 1.2GB of WAL per minute, because copy-on-write cannot tear a page",
    f"{src.NIMBUS}: wal_init_zero=off and wal_recycle=off, since ZFS rewrites WAL files anyway",
    f"{src.OPENZFS_WORKLOAD}: primarycache=all (the advice of primarycache=metadata was"
    " withdrawn upstream: PostgreSQL relies on the file cache); separate datasets for data"
    " and WAL",
    f"{src.NIMBUS}: logbias=throughput without a SLOG fragments small writes badly; keep latency",
    f"{src.PGTUNE}: shared_buffers RAM/4, effective_cache_size RAM*3/4, maintenance_work_mem"
    " RAM/16 (2GB cap), three work_mem per connection and worker with a 4MB floor,"
    " wal_buffers 3% of shared_buffers within 32kB..16MB. Ours: RAM is budgeted once,"
    " shared_buffers, then max(1GB, RAM/8) for the OS, the rest half to the ARC and half"
    " to work_mem (PGTune divides RAM minus shared_buffers as if the ARC took nothing)",
    f"{src.STAMPEDE}: TPS collapsed once Linux dirty memory reached vm.dirty_ratio; 1GB of"
    " vm.dirty_bytes drained in 30s on 1500-IOPS storage (under 10s at 10k IOPS), with"
    " vm.dirty_background_bytes at 25% of it",
)

OLTP_SAFE = BuiltinProfile(
    slug="oltp-safe",
    name="OLTP on ZFS (safe)",
    description=(
        "Many small transactions. 16K records on the data, 128K on the append-only WAL,"
        " lz4 (or the best this host has), no atime, logbias=latency; PostgreSQL told what"
        " ZFS already guarantees; PGTune memory sizes with an ARC that leaves room for"
        " shared_buffers. No setting here can lose a committed transaction."
    ),
    settings=ProfileSettings(
        zfs={
            "data": {"recordsize": "16K", "compression": "lz4", **_COMMON},
            # WAL is written and read sequentially, never randomly inside a file: large
            # records cost no read-modify-write and compress better.
            "wal": {"recordsize": "128K", "compression": "lz4", **_COMMON},
        },
        module=dict(_HOST_MEMORY),
        sysctl=dict(_DIRTY),
        postgres={**_PG_ON_ZFS, **_PGTUNE_MEMORY, **_STORAGE_COSTS},
    ),
    citations=(
        f"{src.NIMBUS}: recordsize=16k gave 1689 vs 1366 TPS for 8k (about +20%), pgbench"
        " scale 1000, 40 clients",
        f"{src.OPENZFS_WORKLOAD_POSTGRES_RECORDSIZE}. We keep the measured 16K on the data and"
        " 128K (which upstream also names) on the append-only WAL; compression=lz4 on both",
        f"{src.PGTUNE}: random_page_cost 1.1 and effective_io_concurrency 200 (ssd) / 1000 (nvme)"
        " on solid-state storage, 4 and 2 on hdd: for OLTP as for analytics",
        *_ZFS_FACTS,
    ),
)

OLTP_BOUNDED_LOSS = BuiltinProfile(
    slug="oltp-bounded-loss",
    name="OLTP, bounded loss (opt-in)",
    description=(
        "OLTP on ZFS (safe), plus: ZFS flushes every second (zfs_txg_timeout=1), sync=disabled"
        " on data and WAL, synchronous_commit=off. The cluster stays consistent after a crash"
        " (ZFS commits whole transaction groups, PostgreSQL replays its WAL), but up to about"
        " one second of committed transactions can be lost. Needs acknowledgement."
    ),
    settings=ProfileSettings(
        zfs={role: {**props, "sync": "disabled"}
             for role, props in OLTP_SAFE.settings.zfs.items()},
        module={**OLTP_SAFE.settings.module, "zfs_txg_timeout": "1"},
        sysctl=dict(OLTP_SAFE.settings.sysctl),
        postgres={**OLTP_SAFE.settings.postgres, "synchronous_commit": "off"},
        requires_acknowledgement=("bounded_loss",),
    ),
    citations=(
        f"{src.NIMBUS}: zfs_txg_timeout=1 with sync=disabled gave 4066 vs 3630 TPS (about"
        " +12%) at the cost of about one second of data loss; the timeout is host-wide",
        *OLTP_SAFE.citations,
    ),
)

ANALYTICS = BuiltinProfile(
    slug="analytics",
    name="Analytics",
    description=(
        "Large scans and sorts. 128K records compress far better and read ahead for free;"
        " zstd (else lz4, else on) on the data; more memory per sort and per maintenance job,"
        " parallel query sized to the CPUs, planner costs for the storage kind."
    ),
    settings=ProfileSettings(
        zfs={
            "data": {"recordsize": "128K", "compression": "zstd", **_COMMON},
            # lz4 on WAL: commit latency still matters while loading data.
            "wal": {"recordsize": "128K", "compression": "lz4", **_COMMON},
        },
        module=dict(_HOST_MEMORY),
        sysctl=dict(_DIRTY),
        postgres={
            **_PG_ON_ZFS, **_PGTUNE_MEMORY,
            # Ours, not PGTune's: PGTune's dw profile halves work_mem but assumes 40
            # connections; we keep the cluster's connections and divide by 2, not 3.
            "work_mem": f"max(16MB, {f.CACHE_ROOM} / 2"
                        f" / ((connections + {f.PGTUNE_WORKERS}) * 2))",
            "maintenance_work_mem": "min(ram / 8, 8GB)",  # PGTune dw: RAM/8, HEAD's 8GB cap
            **_STORAGE_COSTS,
            "default_statistics_target": "500",
            "max_worker_processes": "max(8, cpus)",
            "max_parallel_workers": "max(8, cpus)",
            "max_parallel_workers_per_gather": "max(2, (cpus + 1) // 2)",
            "min_wal_size": "4GB",
            "max_wal_size": "16GB",
        },
    ),
    citations=(
        f"{src.PG_PHRIDAY_ZFS}: compressratio 7.59x at recordsize 128K vs 1.71x at 8K (lz4)",
        f"{src.NIMBUS}: zstd had a slight edge over lz4 in local testing",
        f"{src.PGTUNE}: dw maintenance_work_mem RAM/8, default_statistics_target 500,"
        " min/max_wal_size 4GB/16GB, effective_io_concurrency hdd 2 / ssd 200 / nvme 1000,"
        " random_page_cost 4 on hdd else 1.1, parallel workers from the CPU count",
        *_ZFS_FACTS,
    ),
)

CLONE_DEV = BuiltinProfile(
    slug="clone-dev",
    name="Clone / development",
    description=(
        "Throwaway clones for development and tests: fast writes, little memory, nothing"
        " host-wide (the production cluster on the same host keeps its ARC, txg timeout and"
        " sysctls). sync=disabled and synchronous_commit=off lose the last second or so of"
        " commits on a crash: harmless for a clone, but still acknowledged, because it is"
        " committed data. fsync stays on (see citations). Recordsize is left alone: a clone"
        " shares its origin's blocks, and recordsize only affects newly written data."
    ),
    settings=ProfileSettings(
        zfs={role: {"compression": "lz4", "sync": "disabled", **_COMMON}
             for role in ("data", "wal")},
        module={},
        sysctl={},
        postgres={
            **_PG_ON_ZFS,
            "synchronous_commit": "off",
            "shared_buffers": "max(128MB, min(ram / 16, 1GB))",  # PGTune desktop: RAM/16
            "effective_cache_size": "ram / 4",  # PGTune desktop
            "work_mem": "4MB",
            "maintenance_work_mem": "min(ram / 16, 256MB)",
        },
        requires_acknowledgement=("bounded_loss",),
    ),
    citations=(
        f"{src.PG_PHRIDAY_ZFS}: a writable clone of a snapshot started as a second PostgreSQL"
        " on another port recovers a dropped table; clones cost no space until written",
        f"{src.NIMBUS}: with sync=disabled ZFS stays consistent and PostgreSQL replays its WAL,"
        " so a crash loses about one second, not the cluster; fsync=off would add nothing on"
        " top of that here and would gamble the cluster on any path ZFS does not cover",
        f"{src.PGTUNE}: desktop shared_buffers RAM/16 and effective_cache_size RAM/4",
        *_ZFS_FACTS[:4],
    ),
)

BUILTINS: tuple[BuiltinProfile, ...] = (OLTP_SAFE, OLTP_BOUNDED_LOSS, ANALYTICS, CLONE_DEV)


def builtin(slug: str) -> BuiltinProfile:
    for profile in BUILTINS:
        if profile.slug == slug:
            return profile
    raise KeyError(f"no built-in profile {slug!r}")
