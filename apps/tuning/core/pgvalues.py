"""PostgreSQL values compared the way the server sees them.

pg_settings shows each setting in its own unit (shared_buffers "16384" with unit
"8kB" is 128MB), booleans as on/off and enums in lower case. A desired value
is translated into that form before comparing, so "128MB" matches "16384".
"""

from __future__ import annotations

import re

from apps.common.sizes import MiB, format_pg_size, pg_size_in_unit, unit_bytes
from apps.remote.facts.numbers import is_digits
from apps.remote.facts.postgres import Setting

_TRUE = ("on", "true", "yes", "1")
_FALSE = ("off", "false", "no", "0")
_TIME_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_TIME = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*(us|ms|s|min|h|d)?\s*\Z")
RELOAD_CONTEXTS = ("sighup", "superuser", "user", "superuser-backend", "backend")
ROUND_TO_MIB_FROM = 16 * MiB  # above this, whole MB read better and lose < 0.1%
# Enums that take boolean spellings for one of their values: PostgreSQL 15 made
# wal_compression an enum, and `on` is stored and shown as `pglz`.
ENUM_SYNONYMS = {
    "wal_compression": {**dict.fromkeys(_TRUE, "pglz"), **dict.fromkeys(_FALSE, "off")},
}


def desired_text(value: int | str, unit: str | None) -> str:
    """The text written to postgresql.auto.conf for a resolved profile value.

    An integer for a memory setting (its pg_settings unit) is bytes: it is
    rounded down to that unit (and to whole MB when large) so that the value
    written is exactly what the server will report back.
    """
    if isinstance(value, str):
        return value
    size = unit_bytes(unit)
    if size is None:
        return str(value)
    step = MiB if value >= ROUND_TO_MIB_FROM and MiB % size == 0 else size
    return format_pg_size(max(size, value - value % step))


def shown(row: Setting) -> str:
    """A pg_settings row's value as an operator reads it: 512 x 8kB is 4MB."""
    setting, unit = row.setting, row.unit
    size = unit_bytes(unit)
    if size is not None and is_digits(setting.lstrip("-")) and int(setting) >= 0:
        return format_pg_size(int(setting) * size)
    return f"{setting}{unit}" if unit in _TIME_UNITS else setting


def in_setting_form(text: str, vartype: str | None, unit: str | None = None) -> str | None:
    """text as pg_settings.setting would show it for a setting of this vartype and unit;
    None if it cannot be read."""
    text = text.strip()
    if vartype == "bool":
        return _bool(text)
    if vartype in ("integer", "real"):
        return _number(text, unit)
    if vartype == "enum":
        return text.lower()
    return text


def same(setting: str, desired: str, vartype: str | None, unit: str | None,
         name: str = "") -> bool:
    """Whether pg_settings' `setting` (in its vartype and unit) already reads as desired.

    Takes the row's fields, not a row: the apply step compares what it read back
    from a server, which is no discovered Setting."""
    wanted = in_setting_form(desired, vartype, unit)
    if vartype == "enum" and wanted is not None:
        wanted = ENUM_SYNONYMS.get(name, {}).get(wanted, wanted)
    return wanted is not None and wanted == in_setting_form(setting, vartype, unit)


def _bool(text: str) -> str | None:
    lowered = text.lower()
    if lowered in _TRUE:
        return "on"
    if lowered in _FALSE:
        return "off"
    return None


def _number(text: str, unit: str | None) -> str | None:
    size = unit_bytes(unit)
    try:
        if size is not None:
            return str(pg_size_in_unit(text, unit) // size)
        if unit in _TIME_UNITS:
            return _time(text, unit)
        return _plain(float(text))
    except ValueError:
        return None


def _time(text: str, unit: str) -> str | None:
    match = _TIME.match(text)
    if not match:
        return None
    if not match[2]:
        return _plain(float(match[1]))
    milliseconds = float(match[1]) * _TIME_UNITS[match[2]]
    return _plain(milliseconds / _TIME_UNITS[unit])


def _plain(number: float) -> str:
    """One spelling per number: "4" for 4 and 4.0, "1.1" for 1.1 (exact for big integers)."""
    return str(int(number)) if number.is_integer() else repr(number)


def method_of(row: Setting) -> str | None:
    """How a change takes effect, from pg_settings.context; None when it cannot be set."""
    context = row.context
    if context == "postmaster":
        return "pg_restart"
    if context in RELOAD_CONTEXTS:
        return "pg_reload"
    return None
