"""What PostgreSQL accepts for a setting: names, units, ranges and enum values, per major.

One table per supported major (pg_settings/<major>.tsv, 13 to 18), captured from
that major's real server by tests/tools/pg_settings_tables.py (`make
pg-settings-tables`): see a table's header for where each column comes from.
A host's own pg_settings rows (discovery records name, vartype and unit) win for
that host on what they say; its major's table is the reference for the rest
(limits, enum values). A profile not tied to a host is checked against the union:
a name some supported major has, a value some major having it would take; the
plan then checks it against the host's own major.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from apps.common.sizes import format_pg_size, pg_size_in_unit, unit_bytes
from apps.remote.facts.numbers import is_digits
from apps.remote.facts.postgres import Setting
from apps.tuning.core import pgvalues

TABLES = Path(__file__).with_name("pg_settings")
MAJORS = (13, 14, 15, 16, 17, 18)
# Spellings PostgreSQL accepts beyond pg_settings.enumvals (guc.c's hidden options).
_BOOL_SPELLINGS = ("true", "false", "yes", "no", "1", "0")
_HIDDEN = {"wal_level": ("archive", "hot_standby")}
# Values a server has only when built with lz4, zstd or liburing: Debian's packages are,
# the npm builds the tables come from are not; a server without them refuses the value.
_BUILD_OPTIONS = {"wal_compression": ("lz4", "zstd"), "default_toast_compression": ("lz4",),
                  "io_method": ("io_uring",)}


@dataclass(frozen=True)
class Spec:
    name: str
    vartype: str  # bool | integer | real | string | enum
    unit: str | None
    min_val: float | None
    max_val: float | None
    enumvals: tuple[str, ...] = ()


def parse_table(text: str) -> dict[str, Spec]:
    """name -> Spec from the shipped TSV (comment lines start with #, then a header)."""
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    specs = {}
    for line in lines[1:]:
        name, _context, vartype, unit, low, high, enumvals = line.split("\t")
        specs[name.lower()] = Spec(name, vartype, unit or None, _number(low), _number(high),
                                   tuple(enumvals.split("|")) if vartype == "enum" else ())
    return specs


@cache
def table(major: int) -> dict[str, Spec]:
    """The settings of one supported major; KeyError for another."""
    if major not in MAJORS:
        raise KeyError(major)
    return parse_table((TABLES / f"{major}.tsv").read_text())


@cache
def union() -> dict[str, Spec]:
    """Every supported major's settings, each as the newest major having it describes it."""
    return {name: spec for major in MAJORS for name, spec in table(major).items()}


def reference(major: int | None = None) -> dict[str, Spec]:
    """The table of `major` when it is supported, else the union."""
    return table(major) if major in MAJORS else union()


def majors_with(name: str) -> tuple[int, ...]:
    """The supported majors that have this setting, oldest first."""
    return tuple(major for major in MAJORS if name.lower() in table(major))


def known(name: str) -> bool:
    """A setting of some supported major, or an extension's "prefix.name" (never checked)."""
    return "." in name or name.lower() in union()


def spans() -> str:
    return f"{MAJORS[0]} to {MAJORS[-1]}"


def missing(name: str, major: int | None) -> str | None:
    """Why a server of `major` has no such setting ("PostgreSQL 15 has no setting
    io_method; PostgreSQL 18 has it"); None when it has, or when it cannot be told."""
    if "." in name or major not in MAJORS or name.lower() in table(major):
        return None
    having = majors_with(name)
    if not having:
        return f"no PostgreSQL {spans()} has a setting {name}"
    return f"PostgreSQL {major} has no setting {name}; {_majors(having)} {_verb(having)} it"


def suggestion(name: str) -> str:
    close = difflib.get_close_matches(name.lower(), list(union()), n=1)
    return f"; did you mean {union()[close[0]].name}?" if close else ""


def spec_of(name: str, row: Setting | None = None, major: int | None = None) -> Spec | None:
    """The host's row for its vartype and unit, its major's table for what it lacks."""
    base = reference(major).get(name.lower()) or union().get(name.lower())
    if row is None:
        return base
    return Spec(name, row.vartype or (base.vartype if base else "string"), row.unit,
                base.min_val if base else None, base.max_val if base else None,
                base.enumvals if base else ())


def problem_in_any(name: str, value: int | str) -> str | None:
    """Why no supported major having this setting would take `value` (the newest one's
    reason); None when one would. For a profile not yet tied to a host."""
    reasons = [problem(table(major)[name.lower()], value) for major in majors_with(name)]
    return None if not reasons or None in reasons else reasons[-1]


def _majors(majors: tuple[int, ...]) -> str:
    if len(majors) == 1:
        return f"PostgreSQL {majors[0]}"
    if majors == tuple(range(majors[0], majors[-1] + 1)):
        return f"PostgreSQL {majors[0]} to {majors[-1]}"
    return "PostgreSQL " + ", ".join(map(str, majors))


def _verb(majors: tuple[int, ...]) -> str:
    return "has" if len(majors) == 1 else "have"


def problem(spec: Spec, value: int | str) -> str | None:
    """Why PostgreSQL would refuse `value` for this setting; None when it would take it.

    An int is what a formula resolved to: bytes for a memory setting (as
    pgvalues.desired_text writes it), else a number in the setting's unit.
    """
    if spec.vartype == "bool":
        return None if pgvalues.in_setting_form(str(value), "bool") else \
            f"{value!r} is not on or off"
    if spec.vartype == "enum":
        return _enum_problem(spec, str(value))
    if spec.vartype not in ("integer", "real"):
        return None
    number = _in_unit(spec, value)
    if number is None:
        return f"{value!r} is not {_shape(spec)}"
    if spec.min_val is not None and number < spec.min_val:
        return f"{_show(spec, value)} is below the minimum, {_limit(spec, spec.min_val)}"
    if spec.max_val is not None and number > spec.max_val:
        return f"{_show(spec, value)} is above the maximum, {_limit(spec, spec.max_val)}"
    return None


def _enum_problem(spec: Spec, text: str) -> str | None:
    allowed = {v.lower() for v in spec.enumvals} | set(_HIDDEN.get(spec.name, ())) \
        | set(_BUILD_OPTIONS.get(spec.name, ()))
    if {"on", "off"} <= allowed:
        allowed |= set(_BOOL_SPELLINGS)
    if not spec.enumvals or text.strip().lower() in allowed:
        return None
    extra = tuple(v for v in _BUILD_OPTIONS.get(spec.name, ()) if v not in spec.enumvals)
    shown = ", ".join(value or "''" for value in spec.enumvals + extra)
    return f"{text!r} is not one of {shown}"


def _in_unit(spec: Spec, value: int | str) -> float | None:
    size = unit_bytes(spec.unit)
    if isinstance(value, int):
        return value / size if size else value
    text = value.strip()
    if size and is_digits(text.lstrip("-")):
        return int(text)  # a bare number counts in the setting's unit, sign included
    if size:
        try:
            return pg_size_in_unit(text, spec.unit) / size
        except ValueError:
            return None
    form = pgvalues.in_setting_form(text, spec.vartype, spec.unit)
    return _number(form)


def _shape(spec: Spec) -> str:
    if unit_bytes(spec.unit):
        return "a size such as 64MB (or a number of " + spec.unit + ")"
    if spec.unit:
        return f"a duration such as 30s (or a number of {spec.unit})"
    return "a number"


def _show(spec: Spec, value: int | str) -> str:
    return format_pg_size(value) if isinstance(value, int) and unit_bytes(spec.unit) \
        and value >= 0 else repr(value)


def _limit(spec: Spec, number: float) -> str:
    size = unit_bytes(spec.unit)
    if size and number >= 0:
        return format_pg_size(int(number) * size)
    return f"{number:g}{spec.unit or ''}"


def _number(text: object) -> float | None:
    if text is None or text == "":
        return None
    try:
        number = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
