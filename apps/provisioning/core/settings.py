"""A profile resolved for a cluster that does not exist yet: pure.

Tuning plans changes to clusters discovery found; a new cluster has no
pg_settings rows yet, so its values are resolved here against the host's
facts and the major's settings table (apps/tuning/core/pg_settings), as
tuning resolves them: the same formulas, the same units, the same text.
"""

from __future__ import annotations

from apps.common.sizes import MiB, pg_size_in_unit
from apps.remote.facts.host import HostFacts
from apps.remote.facts.numbers import is_digits
from apps.tuning.core import facts as readers
from apps.tuning.core import pgsettings, pgvalues
from apps.tuning.core.formulas import FormulaError, Variables, resolve
from apps.tuning.core.profiles import ProfileSettings

# What initdb decides and a server cannot change (tuning's planner says the same).
_READ_ONLY = ("data_checksums",)


def resolved(facts: HostFacts, profile: ProfileSettings, major: int
             ) -> tuple[dict[str, dict[str, str]], dict[str, str], list[str]]:
    """The profile's dataset properties by role, its PostgreSQL settings as text for
    postgresql.auto.conf, and notes on what was left out and why."""
    notes: list[str] = []
    zfs = {role: dict(props) for role, props in profile.zfs.items() if role in ("data", "wal")}
    wanted = profile.postgres
    try:
        variables = _variables(facts, wanted)
    except FormulaError as error:
        raise ValueError(f"the profile's settings cannot be resolved here: {error}") from None
    settings: dict[str, str] = {}
    for key, expression in wanted.items():
        if key in _READ_ONLY:
            notes.append(f"{key}: set by initdb (data checksums are always on here)")
            continue
        missing = pgsettings.missing(key, major)
        if missing:
            notes.append(f"{key} left out: {missing}")
            continue
        spec = pgsettings.spec_of(key, major=major)
        try:
            value = resolve(expression, variables)
        except FormulaError as error:
            raise ValueError(f"{key}: {error}") from None
        text = pgvalues.desired_text(value, spec.unit if spec else None)
        problem = pgsettings.problem(spec, text) if spec else None
        if problem:
            raise ValueError(f"{key}: {problem}")
        settings[key] = text
    return zfs, settings, notes


def _variables(facts: HostFacts, wanted: dict[str, str]) -> Variables:
    base = Variables(ram=facts.mem_total, cpus=facts.cpus, connections=100,
                     shared_buffers=None, disk=readers.disk_kind(facts, None))
    connections = 100
    if "max_connections" in wanted:
        value = resolve(wanted["max_connections"], base)
        if not (isinstance(value, int) or is_digits(value)):
            raise FormulaError(f"max_connections must be a whole number, got {value!r}")
        connections = int(value)
    shared = 128 * MiB  # PostgreSQL's default
    if "shared_buffers" in wanted:
        value = resolve(wanted["shared_buffers"], Variables(
            ram=base.ram, cpus=base.cpus, connections=connections, shared_buffers=None,
            disk=base.disk))
        shared = value if isinstance(value, int) else pg_size_in_unit(value, "8kB")
    return Variables(ram=base.ram, cpus=base.cpus, connections=connections,
                     shared_buffers=shared, disk=base.disk)
