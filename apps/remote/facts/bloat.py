"""Dead tuples per database, as PostgreSQL's statistics count them, pg_repack, and TOAST.

Bloat proper (space inside a table's files that no live row uses) takes
pgstattuple, which reads every page, or an estimate from column widths. What
discovery reads instead is cheap and already kept by the server: the
cumulative statistics' `n_live_tup` and `n_dead_tup` per table
(pg_stat_user_tables), which are estimates, reset with the statistics and
blind to space a VACUUM already freed but could not give back. They show the
dead rows no VACUUM has removed yet: vacuum debt, the bloat that is forming.

Two queries, both answering one JSON document so that no database, schema or
table name (which may hold tabs or newlines) can break a row:

- LISTING_QUERY, once per cluster: how many databases there are, the largest
  five of them (templates and databases refusing connections left out: one
  psql session each, in discovery's fourth round trip) and the pg_repack
  version the server could install, if any;
- TABLES_QUERY, in each of those databases of SMALLEST_DATABASE or more: live
  and dead rows summed over its tables, the dead space estimated from them
  (each table's size times its dead share), the five tables with the most dead
  rows, and the pg_repack version installed in that database; and, in the same
  session, the five tables with the largest TOAST tables and their columns
  whose storage lets PostgreSQL compress a value (extended or main), so the
  advisor can tell where PostgreSQL compresses what ZFS would compress anyway.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from apps.common.sizes import MiB

# The least dead space the advisor reports (rules_maintenance.MIN_DEAD_BYTES): a smaller
# database cannot hold that much, so it costs discovery no psql session of its own.
SMALLEST_DATABASE = 32 * MiB

LISTING_QUERY = (
    "select json_build_object("
    "'databases', (select count(*) from pg_database"
    " where not datistemplate and datallowconn),"
    " 'largest', coalesce((select json_agg(json_build_object('name', datname, 'size', size)"
    " order by size desc) from (select datname, pg_database_size(oid) as size"
    " from pg_database where not datistemplate and datallowconn"
    " order by size desc, datname limit 5) d), '[]'),"
    " 'pg_repack', (select default_version from pg_available_extensions"
    " where name = 'pg_repack'))"
)

# pg_table_size (heap, TOAST, free space and visibility maps; not indexes) opens
# each table it measures, so it is asked only of tables holding dead rows, and
# gives up after lock_timeout rather than queue behind an ALTER TABLE or VACUUM FULL.
# TOAST sizes are measured (pg_relation_size of each TOAST table, which releases its
# lock at once) because pg_class.relpages of a TOAST table stays 0 until a VACUUM.
TABLES_QUERY = (
    "set lock_timeout = '5s';"
    " with t as (select s.relid, s.schemaname, s.relname, s.n_live_tup, s.n_dead_tup,"
    " greatest(s.last_vacuum, s.last_autovacuum) as last_vacuum, c.reloptions,"
    " c.reltoastrelid from pg_stat_user_tables s join pg_class c on c.oid = s.relid),"
    " top as (select * from t where n_dead_tup > 0 order by n_dead_tup desc limit 5),"
    " toasted as (select * from (select relid, schemaname, relname,"
    " pg_relation_size(reltoastrelid) as toast_size from t where reltoastrelid <> 0) s"
    " where toast_size > 0 order by toast_size desc limit 5)"
    " select json_build_object("
    "'tables', (select count(*) from t),"
    " 'live', (select coalesce(sum(n_live_tup), 0) from t),"
    " 'dead', (select coalesce(sum(n_dead_tup), 0) from t),"
    " 'dead_bytes', (select coalesce(sum(pg_table_size(relid)::numeric * n_dead_tup"
    " / (n_live_tup + n_dead_tup)), 0)::bigint from t where n_dead_tup > 0),"
    " 'top', coalesce((select json_agg(json_build_object("
    "'schema', schemaname, 'name', relname, 'live', n_live_tup, 'dead', n_dead_tup,"
    " 'size', pg_table_size(relid), 'last_vacuum', last_vacuum,"
    " 'autovacuum_enabled', (select option_value from pg_options_to_table(reloptions)"
    " where option_name = 'autovacuum_enabled'),"
    " 'primary_key', exists(select 1 from pg_index i where i.indrelid = top.relid"
    " and i.indisprimary)) order by n_dead_tup desc) from top), '[]'),"
    " 'toast', coalesce((select json_agg(json_build_object("
    "'schema', schemaname, 'name', relname, 'toast_size', toast_size,"
    " 'columns', coalesce((select json_agg(json_build_object("
    "'name', a.attname, 'storage', a.attstorage) order by a.attnum)"
    " from pg_attribute a where a.attrelid = toasted.relid and a.attnum > 0"
    " and not a.attisdropped and a.attstorage in ('x', 'm')), '[]'))"
    " order by toast_size desc) from toasted), '[]'),"
    " 'pg_repack', (select extversion from pg_extension where extname = 'pg_repack'))"
)


@dataclass(frozen=True)
class Listing:
    """What LISTING_QUERY answered: the databases worth reading and pg_repack's package."""
    databases: int  # all of them but templates and those refusing connections
    largest: list[tuple[str, int | None]]  # (name, size in bytes), largest first
    pg_repack_available: str | None  # the version CREATE EXTENSION would install


@dataclass(frozen=True)
class TableDeadTuples:
    schema: str
    name: str
    live: int
    dead: int
    size: int | None  # pg_table_size: heap, TOAST, free space and visibility maps
    last_vacuum: str | None  # the later of manual and auto VACUUM, the server's ISO text
    autovacuum_enabled: bool | None  # the table's own setting; None: the server's default
    primary_key: bool | None  # pg_repack needs one (or a unique index on NOT NULL columns)

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def dead_share(self) -> float:
        total = self.live + self.dead
        return self.dead / total if total else 0.0

    @property
    def dead_bytes(self) -> int | None:
        """Estimated: the table's size times its share of dead rows."""
        return int(self.size * self.dead_share) if self.size is not None else None


@dataclass(frozen=True)
class ToastColumn:
    name: str
    storage: str  # pg_attribute.attstorage: "x" extended or "m" main, both compressed


@dataclass(frozen=True)
class TableToast:
    """A table with a large TOAST table, and its columns PostgreSQL may compress."""
    schema: str
    name: str
    toast_size: int  # pg_relation_size of its TOAST table
    compressed: list[ToastColumn] = field(default_factory=list)

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True)
class DatabaseDeadTuples:
    name: str
    size: int | None  # pg_database_size
    tables: int
    live: int
    dead: int
    dead_bytes: int  # estimated, summed over the tables holding dead rows
    top: list[TableDeadTuples] = field(default_factory=list)
    pg_repack_installed: str | None = None  # the extension's version in this database
    toast: list[TableToast] = field(default_factory=list)  # largest TOAST tables first

    @property
    def dead_share(self) -> float:
        total = self.live + self.dead
        return self.dead / total if total else 0.0


@dataclass(frozen=True)
class ClusterBloat:
    """Dead tuples in a cluster's largest databases; `not_read` says which were left out."""
    databases: int
    read: list[DatabaseDeadTuples] = field(default_factory=list)
    pg_repack_available: str | None = None
    not_read: list[str] = field(default_factory=list)  # "name: why", for people


def parse_listing(text: str) -> Listing | None:
    """LISTING_QUERY's answer; None when it is not the document asked for."""
    document = _document(text)
    if document is None or not isinstance(document.get("largest"), list):
        return None
    largest = [(entry["name"], _int(entry.get("size"))) for entry in document["largest"]
               if isinstance(entry, dict) and isinstance(entry.get("name"), str)]
    return Listing(databases=_int(document.get("databases")) or len(largest),
                   largest=largest, pg_repack_available=_text(document.get("pg_repack")))


def parse_tables(name: str, size: int | None, text: str) -> DatabaseDeadTuples | None:
    """TABLES_QUERY's answer in database `name` (of `size` bytes, from the listing)."""
    document = _document(text)
    if document is None or not isinstance(document.get("top"), list):
        return None
    return DatabaseDeadTuples(
        name=name, size=size, tables=_int(document.get("tables")) or 0,
        live=_int(document.get("live")) or 0, dead=_int(document.get("dead")) or 0,
        dead_bytes=_int(document.get("dead_bytes")) or 0,
        top=[table for entry in document["top"] if (table := _table(entry))],
        pg_repack_installed=_text(document.get("pg_repack")),
        toast=[table for entry in _list(document.get("toast")) if (table := _toast(entry))],
    )


def _table(entry: object) -> TableDeadTuples | None:
    if not isinstance(entry, dict) or not all(
            isinstance(entry.get(key), str) for key in ("schema", "name")):
        return None
    return TableDeadTuples(
        schema=entry["schema"], name=entry["name"], live=_int(entry.get("live")) or 0,
        dead=_int(entry.get("dead")) or 0, size=_int(entry.get("size")),
        last_vacuum=_text(entry.get("last_vacuum")),
        autovacuum_enabled=parse_bool(entry.get("autovacuum_enabled")),
        primary_key=entry.get("primary_key") if isinstance(entry.get("primary_key"), bool)
        else None,
    )


# attstorage values under which PostgreSQL compresses a value before storing it.
COMPRESSED_STORAGE = ("x", "m")


def _toast(entry: object) -> TableToast | None:
    if not isinstance(entry, dict) or not all(
            isinstance(entry.get(key), str) for key in ("schema", "name")):
        return None
    size = _int(entry.get("toast_size"))
    if size is None:
        return None
    columns = [ToastColumn(c["name"], c["storage"]) for c in _list(entry.get("columns"))
               if isinstance(c, dict) and isinstance(c.get("name"), str)
               and c.get("storage") in COMPRESSED_STORAGE]
    return TableToast(schema=entry["schema"], name=entry["name"], toast_size=size,
                      compressed=columns)


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _document(text: str) -> dict | None:
    """The JSON line of psql's answer (SET's tag or a server WARNING may come before it)."""
    lines = [line for line in text.splitlines() if line.startswith("{")]
    try:
        document = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None
    return document if isinstance(document, dict) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


# PostgreSQL's parse_bool: any unambiguous prefix of true/false/yes/no, on/off, 1/0.
_TRUE = ("true", "yes")
_FALSE = ("false", "no")


def parse_bool(value: object) -> bool | None:
    """A reloption's boolean as PostgreSQL reads it; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    word = value.strip().lower()
    if word in ("on", "1") or any(full.startswith(word) for full in _TRUE):
        return True
    if word in ("off", "of", "0") or any(full.startswith(word) for full in _FALSE):
        return False
    return None
