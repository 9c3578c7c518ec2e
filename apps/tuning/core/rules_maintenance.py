"""Advisor rules about a cluster's tables as discovery reads them: dead rows and bloat,
and TOAST values PostgreSQL compresses on a dataset ZFS compresses."""

from __future__ import annotations

import re

from apps.common.sizes import GiB, MiB
from apps.remote.facts.bloat import (
    SMALLEST_DATABASE,
    ClusterBloat,
    DatabaseDeadTuples,
    TableDeadTuples,
    TableToast,
)
from apps.remote.facts.host import Cluster
from apps.tuning.core import facts as r
from apps.tuning.core import sources as src
from apps.tuning.core.findings import Context, Finding, Rule

# autovacuum_vacuum_scale_factor's default: autovacuum should have vacuumed a table
# long before a fifth of its rows are dead, so more means it is off or held back.
DEAD_SHARE = 0.2
# Dead space below this (estimated) is not worth an operator's time, whatever its share;
# discovery does not read smaller databases.
MIN_DEAD_BYTES = SMALLEST_DATABASE
LARGE_DEAD_BYTES = GiB  # from here the dead space costs real I/O and cache: a warning


def dead_tuples_bloat(ctx: Context) -> list[Finding]:
    """A database, or one of its tables, whose dead rows are past autovacuum's trigger."""
    found = []
    for cluster in ctx.facts.clusters:
        for database in cluster.bloat.read if cluster.bloat else []:
            tables = [t for t in database.top if _bloated(t.dead_share, t.dead_bytes)]
            if tables or _bloated(database.dead_share, database.dead_bytes):
                found.append(_finding(cluster, cluster.bloat, database, tables))
    return found


def _bloated(share: float, dead_bytes: int | None) -> bool:
    return share > DEAD_SHARE and (dead_bytes or 0) >= MIN_DEAD_BYTES


def _finding(cluster: Cluster, bloat: ClusterBloat, database: DatabaseDeadTuples,
             tables: list[TableDeadTuples]) -> Finding:
    named = tables or database.top[:3]
    largest = max([database.dead_bytes, *(t.dead_bytes or 0 for t in named)])
    return Finding(
        "dead_tuples_bloat", "warning" if largest >= LARGE_DEAD_BYTES else "info",
        f"dead rows pile up in database {database.name}",
        f"{cluster.data_dir}, database {database.name}: {database.dead} dead of"
        f" {database.live + database.dead} rows ({_percent(database.dead_share)}), about"
        f" {_size(database.dead_bytes)} of dead space (estimated from the statistics);"
        f" {'; '.join(_table_evidence(t) for t in named)}; {_availability(bloat, database)}",
        "A DELETE or UPDATE leaves the old row version in the table as a dead tuple until"
        " VACUUM removes it, and autovacuum vacuums a table once about 20% of its rows are"
        " dead (autovacuum_vacuum_scale_factor). Past that, autovacuum is off for the table"
        " or held back (a long transaction, an idle-in-transaction session, a prepared"
        " transaction or a replication slot keeping old rows visible, or cost limits too low"
        " for the write rate). Meanwhile every scan reads the dead rows and the table and"
        " its indexes grow: more I/O, a colder ARC and shared_buffers, bigger snapshots and"
        " sends. VACUUM makes the space reusable but seldom gives it back; VACUUM FULL and"
        " CLUSTER shrink the files but lock the table against reads and writes for the"
        " whole rewrite. The counts are the server's statistics (n_dead_tup), estimates of"
        " rows not yet vacuumed: space an earlier VACUUM freed does not show.",
        _action(cluster, bloat, database, named),
        f"{src.NIMBUS_PG_REPACK}; {src.PG_REPACK}; {src.PG_DOCS_VACUUM}",
        subject=f"{cluster.data_dir} (database {database.name})")


def _table_evidence(table: TableDeadTuples) -> str:
    vacuumed = f"last vacuumed {table.last_vacuum}" if table.last_vacuum else "never vacuumed"
    return (f"{table.qualified_name}: {table.dead} dead, {table.live} live"
            f" ({_percent(table.dead_share)} dead), {_size(table.size)} of which about"
            f" {_size(table.dead_bytes)} dead, {vacuumed}"
            + (", autovacuum disabled on the table" if table.autovacuum_enabled is False else ""))


def _availability(bloat: ClusterBloat, database: DatabaseDeadTuples) -> str:
    if database.pg_repack_installed:
        return f"pg_repack {database.pg_repack_installed} installed in {database.name}"
    if bloat.pg_repack_available:
        return (f"pg_repack {bloat.pg_repack_available} available on the host, not installed"
                f" in {database.name}")
    return "pg_repack not available on the host"


def _action(cluster: Cluster, bloat: ClusterBloat, database: DatabaseDeadTuples,
            tables: list[TableDeadTuples]) -> str:
    names = ", ".join(t.qualified_name for t in tables)
    off = [t.qualified_name for t in tables if t.autovacuum_enabled is False]
    keyless = [t.qualified_name for t in tables if t.primary_key is False]
    return " ".join(part for part in (
        f"VACUUM (VERBOSE, ANALYZE) {names} in {database.name} now.",
        "autovacuum=off on this server: set it on (a reload); while it is off only the"
        " vacuums that prevent transaction ID wraparound run."
        if r.setting_value(cluster, "autovacuum") == "off" else "",
        f"Autovacuum is disabled on {', '.join(off)}: ALTER TABLE ... RESET"
        " (autovacuum_enabled) unless something else vacuums it." if off else "",
        "Where autovacuum is on, find what holds it back: the oldest xact_start in"
        " pg_stat_activity, pg_prepared_xacts, pg_replication_slots' xmin.",
        "If a table stays much larger than its live rows need after that, rebuild it online"
        " with pg_repack rather than VACUUM FULL: it copies the table, replays the writes"
        " made meanwhile and takes an exclusive lock only briefly at the start and the end."
        " It needs a primary key (or a unique index on NOT NULL columns) and free space of"
        " about twice the table and its indexes (on ZFS, snapshots keep the old copy's"
        " blocks until they are destroyed).",
        f"{', '.join(keyless)} has no primary key: pg_repack refuses it until it has one."
        if keyless else "",
        _repack_step(cluster, bloat, database),
    ) if part)


def _repack_step(cluster: Cluster, bloat: ClusterBloat, database: DatabaseDeadTuples) -> str:
    if database.pg_repack_installed:
        return (f"pg_repack {database.pg_repack_installed} is installed in {database.name}:"
                f" run the pg_repack client of the same version (pg_repack -d {database.name}"
                " -t TABLE).")
    if bloat.pg_repack_available:
        return (f"pg_repack {bloat.pg_repack_available} is available on this host: CREATE"
                f" EXTENSION pg_repack in {database.name} (as a superuser), then run its"
                " client.")
    major = r.pg_major(cluster) or "NN"
    return ("pg_repack is not installed on this host: install it for PostgreSQL"
            f" {major} (postgresql-{major}-repack on Debian and Ubuntu, pg_repack_{major}"
            f" from the PGDG repository on RHEL), then CREATE EXTENSION pg_repack in"
            f" {database.name}.")


# TOAST below this is too little for PostgreSQL's compressing it to cost anything worth an
# ALTER TABLE; twice SMALLEST_DATABASE, so every database that could hold it is read.
MIN_TOAST_BYTES = 64 * MiB


def toast_compressed_on_zfs(ctx: Context) -> list[Finding]:
    """Large TOAST tables whose values PostgreSQL compresses, on a dataset ZFS compresses."""
    found = []
    datasets = r.datasets(ctx.facts)
    for cluster in ctx.facts.clusters:
        data = datasets.get(cluster.data_dataset or "")
        compression = r.prop(data, "compression")
        if compression in (None, "off") or not cluster.bloat:
            continue
        for database in cluster.bloat.read:
            tables = [t for t in database.toast
                      if t.toast_size >= MIN_TOAST_BYTES and t.compressed]
            if tables:
                found.append(_toast_finding(cluster, data.name, compression, database.name,
                                            tables))
    return found


def _toast_finding(cluster: Cluster, dataset: str, compression: str, database: str,
                   tables: list[TableToast]) -> Finding:
    method = r.setting_value(cluster, "default_toast_compression")
    return Finding(
        "toast_compressed_on_zfs", "info",
        f"PostgreSQL compresses TOAST values in database {database} before ZFS does",
        f"{cluster.data_dir} on {dataset} (compression={compression}), database {database}:"
        f" {'; '.join(_toast_evidence(t) for t in tables)}"
        + (f"; default_toast_compression={method}" if method else ""),
        "PostgreSQL tries to compress every large value of a column with storage EXTENDED"
        " (the default of text, bytea, jsonb and arrays) or MAIN before it moves it to the"
        " TOAST table, with pglz or lz4 (default_toast_compression). On a dataset ZFS"
        " compresses, that is"
        " compression twice: the backends spend CPU compressing on every write and"
        " decompressing on every read, and ZFS is handed data already compressed, which it"
        " cannot shrink further, so it compresses less than it would have.",
        f"{' '.join(_set_storage(t) for t in tables)} (in database {database}) leaves new"
        " values to ZFS: stored out of line without PostgreSQL's compression. Values already"
        " stored keep their compression until they are written again. The ALTER rewrites"
        " nothing and holds its ACCESS EXCLUSIVE lock for a moment, but waits for running"
        " queries on the table and blocks new ones meanwhile."
        " Uncompressed, the TOAST table grows by what PostgreSQL's compression saved (more"
        " pages to cache in shared_buffers); on disk ZFS takes most of it back.",
        src.NIMBUS_NO_PG_COMPRESSION, subject=f"{cluster.data_dir} (database {database})")


def _toast_evidence(table: TableToast) -> str:
    columns = ", ".join(f"{c.name} ({_STORAGE[c.storage]})" for c in table.compressed)
    return (f"{table.qualified_name}: TOAST {_size(table.toast_size)}, columns PostgreSQL"
            f" compresses {columns}")


_STORAGE = {"x": "extended", "m": "main"}


def _set_storage(table: TableToast) -> str:
    columns = ", ".join(f"ALTER COLUMN {_sql_name(c.name)} SET STORAGE EXTERNAL"
                        for c in table.compressed)
    return f"ALTER TABLE {_sql_name(table.schema)}.{_sql_name(table.name)} {columns};"


_PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_$]*")
# PostgreSQL's reserved key words (SQL Key Words appendix, both "reserved" kinds): a
# column named `order` or `user` is a syntax error unquoted.
_RESERVED = frozenset("""
    all analyse analyze and any array as asc asymmetric both case cast check collate column
    constraint create current_catalog current_date current_role current_time
    current_timestamp current_user default deferrable desc distinct do else end except
    false fetch for foreign from grant group having in initially intersect into lateral
    leading limit localtime localtimestamp not null offset on only or order placing primary
    references returning select session_user some symmetric table then to trailing true
    union unique user using variadic when where window with
    authorization binary collation concurrently cross current_schema freeze full ilike
    inner is isnull join left like natural notnull outer overlaps right similar
    tablesample verbose""".split())


def _sql_name(name: str) -> str:
    """A name as the operator can paste it into psql."""
    if _PLAIN_NAME.fullmatch(name) and name not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def _percent(share: float) -> str:
    return f"{share * 100:.0f}%"


def _size(size: int | None) -> str:
    if size is None:
        return "an unknown size"
    return f"{size / GiB:.1f} GiB" if size >= GiB else f"{size / MiB:.0f} MiB"


RULES: tuple[tuple[str, Rule], ...] = (
    ("dead_tuples_bloat", dead_tuples_bloat),
    ("toast_compressed_on_zfs", toast_compressed_on_zfs),
)
