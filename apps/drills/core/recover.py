"""Recovering a dropped table from a snapshot (lesson 61): what is run, decided purely.

The snapshot is cloned and started as a drill's clone is (apps.clones.core.commands).
In that clone, which is disposable, the table is renamed to the name it gets back
(`into`); `pg_dump -t` then dumps it, whole, to a root-only temporary file before
anything touches the origin (not in the clone's socket directory: the clone's own OS
user could rewrite it there, and the origin's superuser runs it); the origin's
`psql --single-transaction` with ON_ERROR_STOP restores it from stdin. So the origin
only ever sees a `CREATE TABLE <into>`: if a table of that name exists the CREATE fails
and the whole restore rolls back (nothing is overwritten), and a dump or restore that
fails halfway leaves nothing behind.
Identifiers are PoZoL's unquoted lower-case kind (apps.remote.commands.pg_identifier),
so they go into SQL as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.clones.core.layout import Layout
from apps.remote.commands import Command, InvalidValue, dbname_conninfo, pg_identifier, script

SUFFIX = "_recovered"
ROWS_MARK = "pozol-rows"

_EXISTS = """\
cd /
runuser -u {owner} -- {psql} -X -At -v ON_ERROR_STOP=1 -h {socket_dir} -p {port} \
-d {conninfo} -c {sql} < /dev/null
"""

_RECOVER = """\
set -e
exec < /dev/null
cd /
f=$(mktemp)
trap 'rm -f "$f"' EXIT
c() {{ {client} {psql} -X -At -v ON_ERROR_STOP=1 -h {socket_dir} -p {port} -U {owner} \
-d {conninfo} "$@"; }}
o() {{ runuser -u {owner} -- {psql} -X -At -v ON_ERROR_STOP=1 -h {origin_socket} \
-p {origin_port} -d {conninfo} "$@"; }}
c -q -c {rename}
{client} {pg_dump} -h {socket_dir} -p {port} -U {owner} -d {conninfo} -t {dumped} > "$f"
o -q --single-transaction -f - < "$f"
printf '{rows_mark} %s\\n' "$(o -c {count})"
"""


@dataclass(frozen=True)
class Target:
    """The table to recover and the name it gets back, both in its schema."""

    database: str
    schema: str
    table: str
    into: str

    @property
    def source(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def recovered(self) -> str:
        return f"{self.schema}.{self.into}"


class RecoverError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def target(database: object, table: object, into: object = None) -> Target:
    """The request checked, or a RecoverError naming the field at fault."""
    name = _identifier("database", database)
    if not isinstance(table, str):
        raise RecoverError("table", "A table is a name, or schema.name.")
    parts = table.split(".")
    if len(parts) > 2:
        raise RecoverError("table", "A table is a name, or schema.name.")
    schema = _identifier("table", parts[0]) if len(parts) == 2 else "public"
    bare = _identifier("table", parts[-1])
    if into is None or into == "":
        into = f"{bare}{SUFFIX}"
        if len(into) > 63:
            raise RecoverError("into", f"{into} is too long for PostgreSQL: name it.")
    into = _identifier("into", into)
    if into == bare:
        raise RecoverError("into", "The recovered table needs a name other than its own.")
    return Target(database=name, schema=schema, table=bare, into=into)


def _identifier(field: str, value: object) -> str:
    try:
        return pg_identifier(value)
    except InvalidValue as exc:
        raise RecoverError(field, str(exc)) from None


def exists(origin_socket: str, origin_port: int, owner: str, bin_dir: str,
           wanted: Target) -> Command:
    """Prints t when `into` names a relation in the origin database already."""
    sql = f"SELECT to_regclass('{wanted.recovered}') IS NOT NULL"
    return script(_EXISTS, owner=owner, psql=f"{bin_dir}/psql", socket_dir=origin_socket,
                  port=origin_port, conninfo=dbname_conninfo(wanted.database), sql=sql,
                  shown=f"is there a {wanted.recovered} in database {wanted.database}?")


def recover(layout: Layout, origin_socket: str, origin_port: int, wanted: Target) -> Command:
    origin = layout.origin
    return script(
        _RECOVER, owner=origin.owner, client=layout.client_user(), psql=f"{origin.bin_dir}/psql",
        pg_dump=f"{origin.bin_dir}/pg_dump", socket_dir=layout.socket_dir, port=layout.port,
        origin_socket=origin_socket, origin_port=origin_port,
        conninfo=dbname_conninfo(wanted.database),
        rename=f"ALTER TABLE {wanted.source} RENAME TO {wanted.into}",
        dumped=wanted.recovered,
        count=f"SELECT count(*) FROM {wanted.recovered}",  # noqa: S608 (pg_identifier-checked)
        rows_mark=ROWS_MARK,
        shown=f"rename {wanted.source} to {wanted.into} in clone {layout.name}, dump it and "
              f"restore it into database {wanted.database} in one transaction")


def rows(stdout: str) -> int | None:
    """The row count the recover script printed, or None."""
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == ROWS_MARK and parts[1].isdigit():
            return int(parts[1])
    return None
