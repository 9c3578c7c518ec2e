"""What a restore drill decides and runs besides the clone engine's own commands: pure.

The drill makes its clone with apps.clones.core.commands.create (the same script a
member's clone uses) and destroys it with commands.destroy; between them, `check`
runs the check query in every database that allows connections.

The query is the operator's text and the cluster's owner is a superuser (COPY ... TO
PROGRAM runs a program on the host as that OS user), so the query never runs as the
owner. The owner creates, in the clone only, a role of the drill's own: NOSUPERUSER,
no CREATEROLE, no membership but pg_read_all_data from PostgreSQL 14 (it reads every
table and may write none); takes CREATE and TEMP from PUBLIC in each database (so the
role creates no table either); and lets it in over the clone's socket (a pg_hba
`trust` line: only root and the clone's own OS user enter its socket directory, mode
700, and PoZoL reaches the clone as root there, apps.clones.core.layout). The role's
statement_timeout is a first limit, one it can lift; `timeout` around psql on the host
is the limit it cannot, and the clone is destroyed after anyway.

The query comes on stdin and goes to `psql -c` (one string the server parses, so no
psql meta-command runs: a query starting with a backslash is refused). Databases are
listed by oid and reached with a quoted `dbname='...'` conninfo, never by a name psql
could read as a connection string. On failure the script prints the clone's server
log tail.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from apps.clones.core.layout import CloneError, Layout
from apps.remote.commands import Command, pg_identifier, script

QUERY_MAX = 4000
# What one database's check may take; the wall-clock limit adds GRACE_SECONDS for psql
# to connect and for the server to end the statement its timeout cancels.
CHECK_SECONDS = 120
GRACE_SECONDS = 5
LOG_LINES = 20
LOG_MARK = "the clone's server log ends:"
TIMED_OUT = "ran past"
ROLE_PREFIX = "pozol_check_"

# Run by the owner in the clone's postgres database; the role's name in :"role".
_ROLE_SQL = r"""
CREATE ROLE :"role" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER ROLE :"role" SET default_transaction_read_only = on;
ALTER ROLE :"role" SET statement_timeout = :'ms';
SELECT format('GRANT pg_read_all_data TO %I', :'role')
 WHERE current_setting('server_version_num')::int >= 140000 \gexec
"""

# Run by the owner in each database before its check: nowhere left to create a table.
_DATABASE_SQL = r"""
SELECT format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC', nspname) FROM pg_namespace
 WHERE has_schema_privilege(:'role', oid, 'CREATE') \gexec
SELECT format('REVOKE TEMP ON DATABASE %I FROM PUBLIC', current_database()) \gexec
SELECT format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), :'role') \gexec
"""

# The database of oid :'oid': a printable name (for the answers) on the first line, then
# its conninfo: the name single-quoted, \ and ' backslash-escaped (libpq's rule).
_NAME_SQL = r"""
SELECT translate(datname, E'\t\n\r', '   ') || E'\n' || 'dbname='''
 || replace(replace(datname, '\', '\\'), '''', '\''') || ''''
 FROM pg_database WHERE oid = :'oid'
"""

_CHECK = r"""set -e
m=$(zfs get -H -o value mountpoint {data_clone})
q=$(cat)
nl=$(printf '
x'); nl=${{nl%x}}
o() {{ {client} {psql} -X -At -v ON_ERROR_STOP=1 -h {socket_dir} -p {port} -U {owner} "$@"; }}
r() {{ PGOPTIONS={options} {client} timeout -k 5 {seconds} {psql} -X -At \
-v ON_ERROR_STOP=1 -h {socket_dir} -p {port} -U {role} "$@" < /dev/null; }}
fail() {{ echo {log_mark} >&2; tail -n {lines} "$m"/pozol-clone.log >&2; exit 1; }}
cd /
out=$(printf '%s' {role_sql} | o -d postgres -q --set=role={role} --set=ms={ms} 2>&1) \
|| {{ echo "creating the check role: $out" >&2; fail; }}
printf 'local all %s trust\n' {role} >> "$m"/{data_below}/pg_hba.conf
out=$(o -d postgres -c 'SELECT pg_reload_conf()' 2>&1) || {{ echo "$out" >&2; fail; }}
i=0
until r -d postgres -c 'SELECT 1' > /dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -ge 100 ] && {{ r -d postgres -c 'SELECT 1' >&2 || true; fail; }}
  sleep 0.05
done
oids=$(o -d postgres -c 'SELECT oid FROM pg_database WHERE datallowconn ORDER BY datname' \
2>&1) || {{ echo "listing the databases: $oids" >&2; fail; }}
for oid in $oids; do
  case $oid in *[!0-9]*) echo "listing the databases: $oids" >&2; fail;; esac
  both=$(printf '%s' {name_sql} | o -d postgres --set=oid="$oid"; echo x)
  both=${{both%?x}}; db=${{both%%"$nl"*}}; ci=${{both#*"$nl"}}
  out=$(printf '%s' {database_sql} | o -d "$ci" -q --set=role={role} 2>&1) \
  || {{ echo "in database $db, taking CREATE and TEMP from PUBLIC: $out" >&2; fail; }}
  out=$(r -d "$ci" -c "$q" 2>&1) || {{
    rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "in database $db: the check query" {timed_out} {seconds} "s and was stopped" >&2
    else
      echo "in database $db: $out" >&2
    fi
    fail
  }}
  printf 'pozol-check\t%s\t%s\n' "$db" "$(printf '%s\n' "$out" | head -n 1)"
done
"""

_LOG_TAIL = """\
m=$(zfs get -H -o value mountpoint {data_clone} 2>/dev/null) && \
tail -n {lines} "$m"/pozol-clone.log 2>/dev/null || true
"""


def check_query(value: object) -> str:
    """The operator's check query, or a CloneError saying why not."""
    if not isinstance(value, str) or not value.strip():
        raise CloneError("check_query", "A check query is SQL text.")
    text = value.strip()
    if len(text) > QUERY_MAX or "\x00" in text:
        raise CloneError("check_query", f"A check query is at most {QUERY_MAX} characters.")
    if text.startswith("\\"):
        raise CloneError("check_query", "A check query is SQL, not a psql meta-command.")
    return text


def check(layout: Layout, query: str, role: str, seconds: int | None = None) -> Command:
    """The check as `role` (a name the origin has no role of: the drill makes it); each
    database's check is stopped after `seconds` (CHECK_SECONDS) and a grace."""
    origin = layout.origin
    seconds = CHECK_SECONDS if seconds is None else seconds
    ms = seconds * 1000
    command = script(
        _CHECK, data_clone=layout.data_clone, data_below=layout.data_below or ".",
        options=f"-c default_transaction_read_only=on -c statement_timeout={ms}",
        owner=origin.owner, client=layout.client_user(), psql=f"{origin.bin_dir}/psql",
        socket_dir=layout.socket_dir,
        port=layout.port, log_mark=LOG_MARK, lines=LOG_LINES, role=pg_identifier(role),
        ms=str(ms), seconds=seconds + GRACE_SECONDS, timed_out=TIMED_OUT,
        role_sql=_ROLE_SQL, database_sql=_DATABASE_SQL, name_sql=_NAME_SQL)
    return Command(command.text, stdin=check_query(query).encode(),
                   shown=f"run the check query as role {role} in every database of clone "
                         f"{layout.name}")


def log_tail(layout: Layout) -> Command:
    return script(_LOG_TAIL, data_clone=layout.data_clone, lines=LOG_LINES,
                  shown=f"read the server log of clone {layout.name}")


def answers(stdout: str) -> dict[str, str]:
    """database -> the first line the check printed there."""
    found = {}
    for line in stdout.splitlines():
        parts = line.split("\t", 2)
        if len(parts) == 3 and parts[0] == "pozol-check":
            found[parts[1]] = parts[2][:200]
    return found


def split_log(stderr: str) -> tuple[str, str]:
    """(the error, the server log tail) of a failed create or check script."""
    for mark in (LOG_MARK, "the clone's server log ends:"):
        if mark in stderr:
            error, tail = stderr.split(mark, 1)
            return error.strip(), tail.strip()
    return stderr.strip(), ""


@dataclass(frozen=True)
class SnapshotSeen:
    dataset: str
    name: str
    created: datetime | None


def newest_common(rows: Iterable[SnapshotSeen], datasets: Iterable[str]) -> str | None:
    """The newest snapshot name present on every one of `datasets` (a clone needs data
    and WAL of one moment), or None."""
    wanted = list(datasets)
    by_name: dict[str, dict[str, datetime | None]] = {}
    for row in rows:
        if row.dataset in wanted:
            by_name.setdefault(row.name, {})[row.dataset] = row.created
    complete = [(max((c for c in seen.values() if c is not None), default=None), name)
                for name, seen in by_name.items() if len(seen) == len(wanted)]
    if not complete:
        return None
    dated = [pair for pair in complete if pair[0] is not None]
    return max(dated)[1] if dated else max(name for _, name in complete)


def pick_port(low: int, high: int, taken: set[int]) -> int | None:
    """A drill's port: from the top of the clone range down, as clones take theirs from
    the bottom up, so the two meet only when the range is full."""
    for port in range(high, low - 1, -1):
        if port not in taken:
            return port
    return None


# recovery_target_time stops before the first transaction committed after the moment, so
# the last one replayed is at or before it; microseconds apart at most from rounding.
REACHED_SLACK = 0.001


def moment_missed(target: float, reached: float | None, archive_timeout: int) -> str:
    """Why a drill to a moment did not prove it ("" when it did): the clone's last
    replayed transaction must be at or before the moment and no further before it than
    the archive's timeout, the most archiving may leave unarchived. On a cluster that
    committed nothing in that time before the moment, the drill cannot tell a quiet
    cluster from missing WAL, and says so."""
    if reached is None:
        return ("the replay applied no transaction: nothing committed between the snapshot "
                "and the moment, or the archived WAL was not read")
    if reached > target + REACHED_SLACK:
        return (f"the replay went past the moment: its last transaction committed "
                f"{reached - target:.3f} s after it")
    if target - reached > archive_timeout:
        return (f"the last transaction replayed committed {target - reached:.0f} s before "
                f"the moment, more than archive_timeout ({archive_timeout} s): WAL may be "
                "missing, or the cluster committed nothing in that time")
    return ""
