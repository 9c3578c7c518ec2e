"""pgbench facts: the summary (stdout), progress lines (stderr), meminfo samples, WAL.

Pure parsers of what pgbench 13-17 print (pgbench's documentation, "Output"): a line that
is missing (an aborted run stops early; PG13/14 lack failures and tries) is
None, never an error. Progress and samples are read while a run goes on, so
their parsers take complete lines only: a line still being written is left
for the next read (see `complete_part`).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

_VERSION = re.compile(r"^pgbench \((?P<client>[^,()\s]+)(?: \([^)]*\))?"
                      r"(?:, server (?P<server>[^)\s]+)(?: \([^)]*\))?)?\)\s*$")
_FIELDS = {
    "transaction_type": re.compile(r"^transaction type: (.+)$"),
    "scale": re.compile(r"^scaling factor: (\d+)$"),
    "query_mode": re.compile(r"^query mode: (\w+)$"),
    "clients": re.compile(r"^number of clients: (\d+)$"),
    "threads": re.compile(r"^number of threads: (\d+)$"),
    "duration_s": re.compile(r"^duration: (\d+) s$"),
    "transactions": re.compile(r"^number of transactions actually processed: (\d+)"),
    "failed": re.compile(r"^number of failed transactions: (\d+)"),
    "latency_avg_ms": re.compile(r"^latency average = ([\d.]+) ms"),
    "latency_stddev_ms": re.compile(r"^latency stddev = ([\d.]+) ms"),
    "connection_time_ms": re.compile(r"^initial connection time = ([\d.]+) ms"),
}
_INTEGERS = {"scale", "clients", "threads", "duration_s", "transactions", "failed"}
_FLOATS = {"latency_avg_ms", "latency_stddev_ms", "connection_time_ms"}
# PG14+: "(without initial connection time)"; PG13: "(excluding connections
# establishing)" is the comparable figure; "including ..." is not.
_TPS = re.compile(r"^tps = ([\d.]+) \((without initial connection time|excluding connections "
                  r"establishing|including reconnection times)\)")
_STATEMENTS_HEADER = re.compile(r"^statement latencies in milliseconds( and failures)?:")
# PG15+ adds a failures column: "   0.115           0  UPDATE ...".
_STATEMENT = re.compile(r"^\s+(?P<latency>[\d.]+)\s+(?:(?P<failures>\d+)\s+)?(?P<text>\S.*)$")
_PROGRESS = re.compile(
    r"^progress: (?P<t>[\d.]+) s, (?P<tps>[\d.]+) tps, lat (?P<lat>[\d.]+|-?nan) ms "
    r"stddev (?P<stddev>[\d.]+|-?nan)(?:, (?P<failed>\d+) failed)?")
ABORTED = "Run was aborted"


@dataclass(frozen=True)
class Summary:
    tps: float | None
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    failed: int | None  # None before PG15, which does not count failures
    transactions: int | None
    clients: int | None
    threads: int | None
    duration_s: int | None  # None in -t mode
    scale: int | None
    per_statement: list[dict] = field(default_factory=list)  # [{statement, latency_ms}]
    version: str | None = None  # the client's; PG13 prints none
    server_version: str | None = None  # only printed when it differs from the client's
    transaction_type: str | None = None
    query_mode: str | None = None
    connection_time_ms: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ProgressPoint:
    t: float  # seconds since the start (or epoch seconds with --progress-timestamp)
    tps: float
    latency_ms: float | None  # None when pgbench printed nan (no transaction that second)
    stddev_ms: float | None
    failed: int | None  # None before PG15


def parse_summary(stdout: str) -> Summary:
    values: dict = {}
    version = server = tps = None
    statements: list[dict] = []
    in_statements = False
    for line in stdout.splitlines():
        if in_statements and (match := _STATEMENT.match(line)):
            statements.append({"statement": match["text"].strip(),
                               "latency_ms": float(match["latency"])})
            continue
        in_statements = bool(_STATEMENTS_HEADER.match(line))
        if match := _VERSION.match(line):
            version, server = match["client"], match["server"]
        elif match := _TPS.match(line):
            tps = float(match[1])
        else:
            _read_field(line, values)
    return Summary(tps=tps, per_statement=statements, version=version, server_version=server,
                   **{name: values.get(name) for name in (*_INTEGERS, *_FLOATS,
                                                          "transaction_type", "query_mode")})


def _read_field(line: str, values: dict) -> None:
    for name, pattern in _FIELDS.items():
        if match := pattern.match(line):
            text = match[1]
            values[name] = (int(text) if name in _INTEGERS else
                            float(text) if name in _FLOATS else text)
            return


def complete_part(text: str) -> str:
    """The complete lines of `text` (up to its last newline); the rest is still being written."""
    return text[: text.rfind("\n") + 1]


def parse_progress(stderr: str) -> list[ProgressPoint]:
    """`progress:` lines (PG13-17) among pgbench's other stderr lines; complete lines only."""
    points = []
    for line in complete_part(stderr).splitlines():
        if match := _PROGRESS.match(line):
            points.append(ProgressPoint(
                t=float(match["t"]), tps=float(match["tps"]), latency_ms=_number(match["lat"]),
                stddev_ms=_number(match["stddev"]),
                failed=int(match["failed"]) if match["failed"] is not None else None))
    return points


def _number(text: str) -> float | None:
    value = float(text)
    return None if math.isnan(value) else value


def was_aborted(stderr: str) -> bool:
    return ABORTED in stderr


# ---- the meminfo sampler ------------------------------------------------------------
# The benchmarks.run operation samples /proc/meminfo once a second while pgbench
# runs and prints one line per sample: `<epoch seconds> <Dirty kB> <Writeback kB>`
# (meminfo's kB is KiB: proc(5)).

_SAMPLE = re.compile(r"^(?P<t>\d+(?:\.\d+)?) (?P<dirty>\d+) (?P<writeback>\d+)$")


def parse_meminfo_samples(text: str) -> list[tuple[float, int, int]]:
    """[(epoch seconds, dirty bytes, writeback bytes)] from complete sampler lines."""
    samples = []
    for line in complete_part(text).splitlines():
        if match := _SAMPLE.match(line.strip()):
            samples.append((float(match["t"]), int(match["dirty"]) * 1024,
                            int(match["writeback"]) * 1024))
    return samples


_START = re.compile(r"^pozol-start (\d+(?:\.\d+)?)$", re.M)


def parse_start_epoch(stderr: str) -> float | None:
    """The `pozol-start <epoch>` line the run command writes before pgbench starts."""
    match = _START.search(stderr)
    return float(match[1]) if match else None


# ---- WAL ---------------------------------------------------------------------------------
# PG14+: pg_stat_wal.wal_bytes (WAL generated since the last stats reset).
# PG13 has no pg_stat_wal: the WAL position in bytes from 0/0 serves instead;
# both are cluster-wide, so other sessions' WAL is counted too.
WAL_BYTES_QUERY = "select wal_bytes from pg_stat_wal"
WAL_LSN_QUERY = "select pg_current_wal_lsn() - '0/0'::pg_lsn"
PG_STAT_WAL_SINCE = 140000


def wal_query(server_version_num: int | None) -> str:
    if server_version_num is not None and server_version_num < PG_STAT_WAL_SINCE:
        return WAL_LSN_QUERY
    return WAL_BYTES_QUERY


def parse_wal_bytes(text: str) -> int:
    """psql -At output of either query: one number (numeric; may print as 123 or 123.0)."""
    value = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not re.fullmatch(r"\d+(?:\.0+)?", value):
        raise ValueError(f"not a WAL byte count: {text.strip()[:80]!r}")
    return int(value.split(".")[0])


def wal_per_transaction(before: int | None, after: int | None,
                        transactions: int | None) -> float | None:
    """WAL bytes per transaction; None when unknown or when the counter was reset between."""
    if before is None or after is None or not transactions or after < before:
        return None
    return (after - before) / transactions
