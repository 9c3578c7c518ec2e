"""A profile resolved against one host's facts: what it would refuse to apply, and why.

Saving a profile checks what needs no host (names, units, enum values, formula
syntax); this checks what does: each formula resolved with this host's RAM,
CPUs and clusters, and the result against that cluster's own pg_settings (or
its major's table where the host's rows say nothing). Settings a host simply
lacks (another PostgreSQL major, zfs-fuse without `sync`) are not problems
here: the planner shows them as unsupported, naming the major or the fallback.
"""

from __future__ import annotations

from apps.remote.facts.host import Cluster, HostFacts
from apps.tuning.core import facts as r
from apps.tuning.core import pgsettings
from apps.tuning.core.formulas import FormulaError, resolve, variables_of
from apps.tuning.core.profiles import MODULE_RANGES, SYSCTLS, ProfileSettings, host_wide_problem


def problems(facts: HostFacts, settings: ProfileSettings) -> list[str]:
    """One readable line per value this host could not take ("postgres.work_mem: ...")."""
    return [*_host_wide(facts, settings), *_postgres(facts, settings)]


def _host_wide(facts: HostFacts, settings: ProfileSettings) -> list[str]:
    entries = [("module", key, value, MODULE_RANGES.get(key, (0, None)))
               for key, value in settings.module.items()]
    entries += [("sysctl", key, value, SYSCTLS.get(key, (0, None)))
                for key, value in settings.sysctl.items()]
    if not entries:
        return []
    try:
        variables = variables_of(facts, None, settings.postgres)
    except FormulaError as error:
        return [f"postgres: {error}"]
    found = []
    for layer, key, expression, limits in entries:
        try:
            trouble = host_wide_problem(resolve(expression, variables), limits)
        except FormulaError as error:
            trouble = str(error)
        if trouble:
            found.append(f"{layer}.{key}: {trouble}")
    return found


def _postgres(facts: HostFacts, settings: ProfileSettings) -> list[str]:
    found: list[str] = []
    clusters = facts.clusters
    for cluster in clusters:
        where = f" (cluster {cluster.data_dir})" if len(clusters) > 1 else ""
        try:
            variables = variables_of(facts, cluster, settings.postgres)
        except FormulaError as error:
            found.append(f"postgres: {error}{where}")
            continue
        for key, expression in settings.postgres.items():
            trouble = _pg_problem(cluster, key, expression, variables)
            if trouble:
                found.append(f"postgres.{key}: {trouble}{where}")
    return found


def _pg_problem(cluster: Cluster, key: str, expression: str, variables) -> str | None:
    try:
        value = resolve(expression, variables)
    except FormulaError as error:
        return str(error)
    row = r.setting(cluster, key)
    spec = pgsettings.spec_of(key, row, r.pg_major(cluster)) \
        if row or not cluster.settings else None
    return pgsettings.problem(spec, value) if spec else None
