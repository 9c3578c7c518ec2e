"""A cluster's settings as PoZoL reads them (pg_settings) and changes them (ALTER
SYSTEM SET or RESET, then a reload), and what gives a changed setting back.

One home for what tuning's apply and rollback, experiments' knobs and WAL archiving's
enable and disable all do to postgresql.auto.conf. Pure: building commands and reading
their output. Names are checked as setting names and values as one line; both travel
as psql variables (`:"name0"` an identifier, `:'value0'` a literal), so psql quotes
them, and the SQL goes on stdin, where psql runs each line as its own statement
(ALTER SYSTEM refuses to run inside a transaction block, which `-c` would make).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from apps.remote.cluster import ClusterTarget
from apps.remote.commands import Command, InvalidValue, pg_setting_name

READ = ("select name, setting, coalesce(unit, ''), vartype, source, "
        "coalesce(sourcefile, ''), pending_restart from pg_settings "
        "where name = any(string_to_array(:'names', ',')) order by name;\n")
SHOW = "show :\"name\";\n"
_SET = "alter system set :\"name{i}\" = :'value{i}';\n"
_RESET = "alter system reset :\"name{i}\";\n"
_RELOAD = "select pg_reload_conf();\n"

MAX_VALUE = 1024


def value(text: object) -> str:
    """A PostgreSQL setting's value as PoZoL writes it: one line, at most 1024 characters."""
    text = str(text)
    if "\n" in text or "\x00" in text or len(text) > MAX_VALUE:
        raise InvalidValue("PostgreSQL value", text,
                           f"one line of at most {MAX_VALUE} characters")
    return text


def read(cluster: ClusterTarget, names: Iterable[str]) -> Command:
    """The pg_settings rows of `names`, in one query."""
    names = [pg_setting_name(name) for name in names]
    return cluster.psql(READ, names=",".join(names))


def parse(names: Iterable[str], stdout: str) -> dict[str, dict]:
    """name -> {setting, unit, vartype, source, from_auto_conf, pending_restart};
    refused when the server has no row for one of `names`."""
    found = {}
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) != 7:
            continue
        name, setting, unit, vartype, source, sourcefile, pending = parts
        found[name] = {"setting": setting, "unit": unit, "vartype": vartype,
                       "source": source,
                       "from_auto_conf": sourcefile.endswith("postgresql.auto.conf"),
                       "pending_restart": pending == "t"}
    missing = [name for name in names if name not in found]
    if missing:
        raise InvalidValue("PostgreSQL setting", ", ".join(missing),
                           "this server has no such setting")
    return found


def show(cluster: ClusterTarget, name: str) -> Command:
    """SHOW: the value as an operator writes it (512 x 8kB reads 4MB)."""
    return cluster.psql(SHOW, name=pg_setting_name(name))


def write(cluster: ClusterTarget, values: Mapping[str, str | None]) -> Command:
    """ALTER SYSTEM SET each (None: RESET, back to postgresql.conf), then one reload."""
    if not values:
        raise InvalidValue("PostgreSQL settings", values, "nothing to write")
    sql, variables = "", {}
    for i, (name, text) in enumerate(values.items()):
        variables[f"name{i}"] = pg_setting_name(name)
        if text is None:
            sql += _RESET.format(i=i)
        else:
            sql += _SET.format(i=i)
            variables[f"value{i}"] = value(text)
    return cluster.psql(sql + _RELOAD, **variables)


def giving_back(before: Mapping[str, Mapping]) -> dict[str, str | None]:
    """The writes that put settings back as `before` read them ({name: {"value",
    "from_auto_conf"}}): a value that came from postgresql.auto.conf is set again; any
    other is reset, so postgresql.conf or the default rules again rather than a pin."""
    return {name: (row["value"] if row.get("from_auto_conf") else None)
            for name, row in before.items()}
