"""Desired profile values against current facts: one Change per value that differs.

Also `project()`: the facts as they would read after the supported changes are
applied. The advisor judges that projection, so a plan shows what it fixes and
what it would introduce before anything touches a host.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, replace

from apps.common.sizes import MiB, format_gib, parse_zfs_size
from apps.remote.facts.host import Cluster, HostFacts
from apps.remote.facts.numbers import is_digits
from apps.remote.facts.postgres import Setting
from apps.remote.facts.zfs import PropertyValue
from apps.tuning.core import facts as r
from apps.tuning.core import pgsettings, pgvalues
from apps.tuning.core.findings import Finding
from apps.tuning.core.formulas import (
    FormulaError,
    Variables,
    is_formula,
    resolve,
    variables_of,
)
from apps.tuning.core.profiles import (
    EXPERIMENT,
    SYSCTL_COUNTERPART,
    ProfileSettings,
    recordsize_problem,
)
from apps.tuning.core.winners import Winner, Winners, winner_of

COMPRESSION_CHAIN = ("zstd", "lz4", "on")  # best first; "on" exists on every ZFS
NEW_DATA_ONLY = ("recordsize", "compression")
BYTE_VALUED = frozenset({"zfs_arc_max", "zfs_arc_min", "zfs_dirty_data_max",
                         "vm.dirty_bytes", "vm.dirty_background_bytes"})
MEDIUM_RISK = frozenset({"zfs_arc_max", "zfs_txg_timeout", "full_page_writes", "logbias",
                         "primarycache", "redundant_metadata", "wal_sync_method", "wal_level",
                         "vm.dirty_bytes", "vm.dirty_ratio"})
MODULE_NOTE = ("written to /sys/module/zfs/parameters now; persist with `options zfs"
               " NAME=VALUE` in /etc/modprobe.d/zfs.conf")


@dataclass(frozen=True)
class Change:
    layer: str  # "zfs" | "module" | "sysctl" | "postgres"
    target: str  # dataset name | "zfs" (module) | "kernel" (sysctl) | cluster data_dir
    key: str  # property / parameter / sysctl / setting
    current: str | None
    desired: str  # resolved, exactly as it will be written on the host
    formula: str | None  # the profile's expression when it was one
    method: str  # zfs_set | zfs_set_new_data | sysctl | module_param | pg_reload | pg_restart
    supported: bool
    reason: str  # why unsupported, or a note (e.g. "applies to newly written data only")
    fallback_for: str | None  # what the profile asked for when `desired` is a fallback
    risk: str  # "low" | "medium" | "high"
    findings: tuple[str, ...] = ()  # advisor finding ids this change relates to
    # Findings that appear only once the plan is applied and that this change causes
    # (severity, title, ...): the row that brings a hazard onto this host says so.
    hazards: tuple[Finding, ...] = ()

    @property
    def awaits_experiment(self) -> bool:
        """Left to an experiment that has not named a winner here: not planned, not a
        host's limit."""
        return not self.supported and self.desired == EXPERIMENT

    @property
    def acknowledgements(self) -> tuple[str, ...]:
        """Risk ids this change carries whatever profile it came from."""
        if (self.key, self.desired) in {("sync", "disabled"), ("synchronous_commit", "off")}:
            return ("bounded_loss",)
        if self.key == "fsync" and pgvalues.in_setting_form(self.desired, "bool") == "off":
            return ("unsafe_fsync",)
        return ()


def compute_changes(facts: HostFacts, settings: ProfileSettings,
                    winners: Winners | None = None) -> list[Change]:
    """Every value of `settings` that differs from `facts`, supported or not, unordered.
    `winners`: what this host's experiments decided, for values left to them."""
    found = [*_zfs_changes(facts, settings, winners), *_host_changes(facts, settings),
             *_postgres_changes(facts, settings)]
    unique: dict[tuple[str, str, str], Change] = {}
    for change in found:  # two clusters on one dataset would list it twice
        unique.setdefault((change.layer, change.target, change.key), change)
    return list(unique.values())


def _make(layer: str, target: str, key: str, current: str | None, desired: str,
          formula: str | None, method: str, reason: str = "", supported: bool = True,
          fallback_for: str | None = None) -> Change:
    change = Change(layer, target, key, current, desired, formula, method, supported, reason,
                    fallback_for, "low")
    risk = "high" if change.acknowledgements else (
        "medium" if key in MEDIUM_RISK or method == "pg_restart" else "low")
    return replace(change, risk=risk)


# -- zfs ---------------------------------------------------------------------------------------

def _zfs_changes(facts: HostFacts, settings: ProfileSettings,
                 winners: Winners | None) -> Iterator[Change]:
    for cluster in facts.clusters:
        for role, names in r.roles(facts, cluster).items():
            for name in names:
                for key, wanted in settings.zfs.get(role, {}).items():
                    if wanted == EXPERIMENT:
                        change = _decided_by_experiment(facts, name, key,
                                                        winner_of(winners, name, key))
                    else:
                        change = _zfs_change(facts, name, key, wanted)
                    if change:
                        yield change


def _decided_by_experiment(facts: HostFacts, name: str, key: str,
                           winner: Winner) -> Change | None:
    """The experiment's winner planned like any value, saying where it came from; without
    a winner, a change that is not planned and says why (never a guess)."""
    if winner.value is None:
        return _not_planned(facts, name, key, winner.reason)
    trouble = recordsize_problem(winner.value) if key == "recordsize" else None
    if trouble:
        return _not_planned(facts, name, key, f"{winner.reason}, but {trouble}")
    change = _zfs_change(facts, name, key, winner.value)
    return change and replace(change, formula=EXPERIMENT,
                              reason=f"{winner.reason}; {change.reason}")


def _not_planned(facts: HostFacts, name: str, key: str, reason: str) -> Change:
    current = r.prop(r.datasets(facts).get(name), key)
    method = "zfs_set_new_data" if key in NEW_DATA_ONLY else "zfs_set"
    return _make("zfs", name, key, current, EXPERIMENT, EXPERIMENT, method, reason,
                 supported=False)


def _zfs_change(facts: HostFacts, name: str, key: str, wanted: str) -> Change | None:
    current = r.prop(r.datasets(facts).get(name), key)
    caps = r.capabilities(facts)
    desired, fallback_for, missing = wanted, None, _missing_property(facts, key)
    if key == "compression":
        desired = _best_compression(wanted, caps.compression if caps else None)
        fallback_for = wanted if desired != wanted else None
        missing = missing or (None if desired else
                              f"this ZFS supports none of {', '.join(_chain(wanted))}")
    if missing is None and zfs_same(key, current, desired or wanted):
        return None
    method = "zfs_set_new_data" if key in NEW_DATA_ONLY else "zfs_set"
    note = "applies to newly written data only: existing blocks keep theirs until rewritten"
    return _make("zfs", name, key, current, desired or wanted, None, method,
                 missing or (note if method == "zfs_set_new_data" else ""),
                 supported=missing is None, fallback_for=fallback_for)


def _missing_property(facts: HostFacts, key: str) -> str | None:
    caps = r.capabilities(facts)
    flag = {"sync": "sync_property", "redundant_metadata": "redundant_metadata_property"}
    if key in flag and caps is not None and getattr(caps, flag[key]) is False:
        implementation = facts.zfs.implementation if facts.zfs else None
        return f"{implementation or 'this ZFS'} has no {key!r} property on this host"
    return None


def _chain(wanted: str) -> tuple[str, ...]:
    family = "zstd" if wanted.startswith("zstd") else wanted
    rest = COMPRESSION_CHAIN[COMPRESSION_CHAIN.index(family) + 1:] \
        if family in COMPRESSION_CHAIN else ()
    return (wanted, *rest)


def _best_compression(wanted: str, available: tuple[str, ...] | None) -> str | None:
    """The first of wanted, then the weaker members of zstd -> lz4 -> on, the host offers."""
    if available is None:
        return wanted  # capabilities unknown: let zfs itself refuse
    for value in _chain(wanted):
        if value in available or (value.startswith("gzip-") and "gzip-[1-9]" in available):
            return value
    return None


def zfs_same(key: str, current: str | None, desired: str) -> bool:
    if current is None:
        return False
    if key == "recordsize":
        return parse_zfs_size(current) == parse_zfs_size(desired)
    return current.lower() == desired.lower()


# -- module parameters and sysctls (host-wide) ----------------------------------------------

def _host_changes(facts: HostFacts, settings: ProfileSettings) -> Iterator[Change]:
    if not settings.module and not settings.sysctl:
        return
    try:
        variables: Variables | None = variables_of(facts, None, settings.postgres)
        error = ""
    except FormulaError as failure:
        variables, error = None, str(failure)
    for key, expression in settings.module.items():
        yield from _module_change(facts, key, expression, variables, error)
    for key, expression in settings.sysctl.items():
        yield from _sysctl_change(facts, key, expression, variables, error)


def _module_change(facts: HostFacts, key: str, expression: str, variables: Variables | None,
                   error: str) -> Iterator[Change]:
    params = facts.module_params
    current = None if params is None else params.get(key)
    desired, error = _host_value(key, expression, variables, error)
    if error == "" and current is not None and current.strip() == desired:
        return
    implementation = (facts.zfs.implementation if facts.zfs else None) or "no ZFS module"
    if params is None:
        error = error or f"no /sys/module/zfs/parameters on this host ({implementation})"
    elif key not in params:
        error = error or f"this ZFS module ({_version(facts)}) has no parameter {key}"
    note = MODULE_NOTE + (_arc_note(facts, desired) if key == "zfs_arc_max" else "")
    yield _make("module", "zfs", key, current, desired, _formula(expression), "module_param",
                error or note, supported=not error)


def _arc_note(facts: HostFacts, desired: str) -> str:
    """What writing zfs_arc_max does on a running OpenZFS, and what its rollback can
    restore (core/rollback.py has the source it was checked against)."""
    ceiling = facts.arcstats.c_max if facts.arcstats else None
    now = f"now c_max {ceiling} ({format_gib(ceiling)})" if ceiling else "c_max not known"
    if desired.strip() == "0":
        return ("; 0 asks for automatic sizing, which a running OpenZFS ignores: the ARC"
                f" keeps its ceiling ({now}) until the next boot")
    return ("; takes effect now if OpenZFS accepts it (at least 64 MiB, above zfs_arc_min,"
            " below RAM: PoZoL checks arcstats c_max after writing), and lowering it shrinks"
            " the ARC only under memory pressure; rollback restores the previous effective"
            f" size now (arcstats c_max just before applying, {now}), since 0 cannot be"
            " written back to a running module, and automatic sizing at the next boot (the"
            " line leaves /etc/modprobe.d/zfs.conf)")


def _sysctl_change(facts: HostFacts, key: str, expression: str, variables: Variables | None,
                   error: str) -> Iterator[Change]:
    value = r.sysctl(facts, key)
    current = None if value is None else str(value)
    desired, error = _host_value(key, expression, variables, error)
    if error == "" and current == desired:
        return
    other = SYSCTL_COUNTERPART.get(key)
    note = f"{other} will read 0: the kernel keeps one of the pair" if other else ""
    yield _make("sysctl", "kernel", key, current, desired, _formula(expression), "sysctl",
                error or note, supported=not error)


def _host_value(key: str, expression: str, variables: Variables | None,
                error: str) -> tuple[str, str]:
    if variables is None:
        return expression, error
    try:
        value = resolve(expression, variables)
    except FormulaError as failure:
        return expression, str(failure)
    if isinstance(value, int) and key in BYTE_VALUED and value >= MiB:
        value -= value % MiB  # whole MiB: the same on every re-plan, easy to read
    return str(value), ""


def _version(facts: HostFacts) -> str:
    version = r.zfs_version(facts)
    return ".".join(map(str, version)) if version else "version unknown"


def _formula(expression: str) -> str | None:
    return expression if is_formula(expression) else None


# -- postgres (per cluster) ----------------------------------------------------------------

def _postgres_changes(facts: HostFacts, settings: ProfileSettings) -> Iterator[Change]:
    for cluster in facts.clusters:
        try:
            variables: Variables | None = variables_of(facts, cluster, settings.postgres)
            error = ""
        except FormulaError as failure:
            variables, error = None, str(failure)
        for key, expression in settings.postgres.items():
            change = _pg_change(cluster, key, expression, variables, error)
            if change:
                yield change


def _pg_change(cluster: Cluster, key: str, expression: str, variables: Variables | None,
               error: str) -> Change | None:
    row, target = r.setting(cluster, key), cluster.data_dir
    desired = expression
    if not error and variables is not None:
        try:
            value = resolve(expression, variables)
            desired = pgvalues.desired_text(value, row.unit if row else None)
        except FormulaError as failure:
            error = str(failure)
    if not error and row and pgvalues.same(row.setting, desired, row.vartype, row.unit, key):
        return None
    current = pgvalues.shown(row) if row else None
    error = error or _pg_refusal(cluster, key, desired, row)
    method = (pgvalues.method_of(row) if row else None) or "pg_reload"
    note = {"pg_restart": "takes effect at the next restart",
            "pg_reload": "takes effect on reload"}[method]
    return _make("postgres", target, key, current, desired, _formula(expression), method,
                 error or note, supported=not error)


def _pg_refusal(cluster: Cluster, key: str, desired: str, row: Setting | None) -> str:
    """Why this cluster cannot take this value; "" when it can."""
    if cluster.error or not cluster.settings:
        return f"the cluster's settings could not be read: {cluster.error or 'none'}"
    if row is None:
        major = r.pg_major(cluster)
        return pgsettings.missing(key, major) or f"PostgreSQL {major} has no setting {key}"
    if pgvalues.method_of(row) is None:
        if key == "data_checksums":
            return ("read-only: set by initdb -k, or pg_checksums --enable on a cleanly"
                    " stopped cluster (PostgreSQL 12+)")
        return f"read-only on a running server (context {row.context})"
    if key == "full_page_writes" and not cluster.data_dataset \
            and pgvalues.in_setting_form(desired, row.vartype, row.unit) == "off":
        return ("refused: the data directory is not on ZFS, where a torn page would need"
                " full_page_writes to be repaired")
    return ""


# -- projection ---------------------------------------------------------------------------------

def project(facts: HostFacts, changes: list[Change]) -> HostFacts:
    """A copy of facts as they would read after the supported changes (restarts done)."""
    after = copy.deepcopy(facts)
    for change in changes:
        if change.supported:
            _APPLY[change.layer](after, change)
    return after


def _apply_zfs(facts: HostFacts, change: Change) -> None:
    dataset = r.datasets(facts).get(change.target)
    if dataset is None:
        return
    value = change.desired
    if change.key == "recordsize":
        value = str(parse_zfs_size(value))  # as `zfs get -p` prints it
    dataset.properties[change.key] = PropertyValue(value, "local")


def _apply_module(facts: HostFacts, change: Change) -> None:
    facts.module_params = {**(facts.module_params or {}), change.key: change.desired}


def _apply_sysctl(facts: HostFacts, change: Change) -> None:
    sysctls = facts.sysctls
    sysctls[change.key] = int(change.desired) if is_digits(change.desired) else change.desired
    if change.key in SYSCTL_COUNTERPART:
        sysctls[SYSCTL_COUNTERPART[change.key]] = 0


def _apply_postgres(facts: HostFacts, change: Change) -> None:
    for cluster in facts.clusters:
        if cluster.data_dir == change.target:
            cluster.settings = [_applied(row, change) if row.name == change.key else row
                                for row in cluster.settings]


def _applied(row: Setting, change: Change) -> Setting:
    setting = pgvalues.in_setting_form(change.desired, row.vartype, row.unit) or change.desired
    return replace(row, setting=setting, source="configuration file", pending_restart=False)


_APPLY = {"zfs": _apply_zfs, "module": _apply_module, "sysctl": _apply_sysctl,
          "postgres": _apply_postgres}
