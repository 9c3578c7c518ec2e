"""What a restore drill decides and runs besides the clone engine's own commands: pure.

The drill makes its clone with apps.clones.core.commands.create (the same script a
member's clone uses) and destroys it with commands.destroy; between them, `check`
runs the check query in every database that allows connections, as the cluster's
owner over the clone's own socket (PoZoL's way in, apps.clones.core.layout), read-only
and with a statement timeout. The query comes on stdin and goes to `psql -c` (one
string the server parses, so no psql meta-command runs: a query starting with a
backslash is refused). On failure the script prints the clone's server log tail.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from apps.clones.core.layout import CloneError, Layout
from apps.remote.commands import Command, script

QUERY_MAX = 4000
STATEMENT_TIMEOUT_MS = 120_000
LOG_LINES = 20
LOG_MARK = "the clone's server log ends:"

_CHECK = """\
set -e
m=$(zfs get -H -o value mountpoint {data_clone})
q=$(cat)
export PGOPTIONS={options}
p() {{ {client} {psql} -X -At -v ON_ERROR_STOP=1 -h {socket_dir} -p {port} -U {owner} "$@"; }}
fail() {{ echo {log_mark} >&2; tail -n {lines} "$m"/pozol-clone.log >&2; exit 1; }}
cd /
dbs=$(p -d postgres -c 'SELECT datname FROM pg_database WHERE datallowconn ORDER BY 1' \
2>&1) || {{ echo "listing the databases: $dbs" >&2; fail; }}
echo "$dbs" | while IFS= read -r db; do
  out=$(p -d "$db" -c "$q" 2>&1) || {{ echo "in database $db: $out" >&2; fail; }}
  printf 'pozol-check\\t%s\\t%s\\n' "$db" "$(printf '%s\\n' "$out" | head -n 1)"
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


def check(layout: Layout, query: str) -> Command:
    origin = layout.origin
    options = (f"-c default_transaction_read_only=on "
               f"-c statement_timeout={STATEMENT_TIMEOUT_MS}")
    command = script(_CHECK, data_clone=layout.data_clone, options=options,
                     owner=origin.owner, client=layout.client_user(),
                     psql=f"{origin.bin_dir}/psql",
                     socket_dir=layout.socket_dir, port=layout.port, log_mark=LOG_MARK,
                     lines=LOG_LINES)
    return Command(command.text, stdin=check_query(query).encode(),
                   shown=f"run the check query in every database of clone {layout.name}")


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
