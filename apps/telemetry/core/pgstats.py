"""One query per PostgreSQL cluster for a telemetry sample, and its parser.

The query answers `key<TAB>value` rows (psql -At -F tab, as
apps.remote.cluster runs it), so the parser never depends on column order and
a source this server version lacks is simply a key that is not there (read as
"not available", never as zero). NULL prints as an empty field.

Which view holds what, by server version (PostgreSQL documentation,
"Monitoring Database Activity", chapters for 10 to 18):

- pg_stat_database (all): xact_commit, xact_rollback, blks_read, blks_hit,
  tup_*, temp_bytes, deadlocks; summed over databases.
- pg_stat_wal (14+): wal_records, wal_fpi, wal_bytes, wal_buffers_full; its
  counters reset with pg_stat_reset_shared('wal'). The WAL position
  (pg_current_wal_lsn(), 10+; the replay position on a standby) is kept too:
  a byte counter that no statistics reset touches.
- checkpoints: pg_stat_bgwriter's checkpoints_timed, checkpoints_req,
  checkpoint_write_time, checkpoint_sync_time, buffers_checkpoint before 17;
  pg_stat_checkpointer's num_timed, num_requested, write_time, sync_time,
  buffers_written from 17 (the columns moved, renamed). Times are in ms.
- pg_stat_activity (10+ has backend_type): client connections by state.
- age(datfrozenxid) of pg_database: transaction ID age (wraparound).
- pg_stat_replication on a primary: standbys, the largest replay lag in bytes
  (pg_wal_lsn_diff) and in seconds (replay_lag, 10+); on a standby, the age of
  the last replayed transaction. pg_current_wal_lsn() raises an error during
  recovery, so it is only evaluated inside CASE WHEN NOT pg_is_in_recovery().

Checked on the test hosts' PostgreSQL 15; the 14- and 17+ branches follow the
documented views and are exercised by their SQL text only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_WAL_POSITION = (
    "pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
    "ELSE pg_current_wal_lsn() END, '0/0')"
)
_COMMON = (
    ("server_version_num", "current_setting('server_version_num')"),
    ("postmaster_start", "extract(epoch FROM pg_postmaster_start_time())"),
    ("in_recovery", "pg_is_in_recovery()"),
    ("max_connections", "current_setting('max_connections')"),
    ("xact_commit", "(SELECT sum(xact_commit) FROM pg_stat_database)"),
    ("xact_rollback", "(SELECT sum(xact_rollback) FROM pg_stat_database)"),
    ("blks_read", "(SELECT sum(blks_read) FROM pg_stat_database)"),
    ("blks_hit", "(SELECT sum(blks_hit) FROM pg_stat_database)"),
    ("tup_inserted", "(SELECT sum(tup_inserted) FROM pg_stat_database)"),
    ("tup_updated", "(SELECT sum(tup_updated) FROM pg_stat_database)"),
    ("tup_deleted", "(SELECT sum(tup_deleted) FROM pg_stat_database)"),
    ("temp_bytes", "(SELECT sum(temp_bytes) FROM pg_stat_database)"),
    ("deadlocks", "(SELECT sum(deadlocks) FROM pg_stat_database)"),
    ("xid_age_max", "(SELECT max(age(datfrozenxid)) FROM pg_database)"),
    ("wal_position", _WAL_POSITION),
    ("standbys", "(SELECT count(*) FROM pg_stat_replication)"),
    ("standby_lag_bytes_max",
     "(SELECT max(CASE WHEN NOT pg_is_in_recovery() THEN "
     "pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn) END) FROM pg_stat_replication)"),
    ("standby_lag_seconds_max",
     "(SELECT max(extract(epoch FROM replay_lag)) FROM pg_stat_replication)"),
    ("replay_age_seconds",
     "CASE WHEN pg_is_in_recovery() THEN "
     "extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END"),
)
_WAL_14 = (
    ("wal_records", "(SELECT wal_records FROM pg_stat_wal)"),
    ("wal_fpi", "(SELECT wal_fpi FROM pg_stat_wal)"),
    ("wal_bytes", "(SELECT wal_bytes FROM pg_stat_wal)"),
    ("wal_buffers_full", "(SELECT wal_buffers_full FROM pg_stat_wal)"),
)
_BGWRITER = (
    ("checkpoints_timed", "(SELECT checkpoints_timed FROM pg_stat_bgwriter)"),
    ("checkpoints_requested", "(SELECT checkpoints_req FROM pg_stat_bgwriter)"),
    ("checkpoint_write_ms", "(SELECT checkpoint_write_time FROM pg_stat_bgwriter)"),
    ("checkpoint_sync_ms", "(SELECT checkpoint_sync_time FROM pg_stat_bgwriter)"),
    ("checkpoint_buffers", "(SELECT buffers_checkpoint FROM pg_stat_bgwriter)"),
)
_CHECKPOINTER_17 = (
    ("checkpoints_timed", "(SELECT num_timed FROM pg_stat_checkpointer)"),
    ("checkpoints_requested", "(SELECT num_requested FROM pg_stat_checkpointer)"),
    ("checkpoint_write_ms", "(SELECT write_time FROM pg_stat_checkpointer)"),
    ("checkpoint_sync_ms", "(SELECT sync_time FROM pg_stat_checkpointer)"),
    ("checkpoint_buffers", "(SELECT buffers_written FROM pg_stat_checkpointer)"),
)
_CONNECTIONS = (
    "SELECT 'connections:' || coalesce(state, 'unknown'), count(*)::text "
    "FROM pg_stat_activity WHERE backend_type = 'client backend' GROUP BY state"
)
CONNECTION_PREFIX = "connections:"


def stats_query(server_version_num: int) -> str:
    """The query for a server of this version (server_version_num, e.g. 150020)."""
    pairs = _COMMON + (_WAL_14 if server_version_num >= 140000 else ()) + (
        _CHECKPOINTER_17 if server_version_num >= 170000 else _BGWRITER)
    rows = [f"SELECT '{key}', ({expression})::text" for key, expression in pairs]
    return " UNION ALL ".join([*rows, _CONNECTIONS])


@dataclass(frozen=True)
class PgStats:
    """One cluster's statistics; None means this server does not report it."""

    server_version_num: int | None
    postmaster_start: float | None  # epoch seconds: a restart resets some counters
    in_recovery: bool | None
    max_connections: int | None
    xact_commit: int | None
    xact_rollback: int | None
    blks_read: int | None
    blks_hit: int | None
    tup_inserted: int | None
    tup_updated: int | None
    tup_deleted: int | None
    temp_bytes: int | None
    deadlocks: int | None
    xid_age_max: int | None
    wal_position: int | None  # bytes since 0/0: insert position, or replay on a standby
    wal_records: int | None  # pg_stat_wal, 14+
    wal_fpi: int | None
    wal_bytes: int | None
    wal_buffers_full: int | None
    checkpoints_timed: int | None
    checkpoints_requested: int | None
    checkpoint_write_ms: float | None
    checkpoint_sync_ms: float | None
    checkpoint_buffers: int | None
    standbys: int | None
    standby_lag_bytes_max: int | None
    standby_lag_seconds_max: float | None
    replay_age_seconds: float | None  # on a standby: since the last replayed transaction
    connections: dict[str, int] = field(default_factory=dict)  # client backends by state


_FLOATS = {"postmaster_start", "checkpoint_write_ms", "checkpoint_sync_ms",
           "standby_lag_seconds_max", "replay_age_seconds"}
_BOOLS = {"in_recovery"}


def parse_pg_stats(text: str) -> PgStats:
    """psql's `key<TAB>value` rows; unknown keys and unreadable values are left out."""
    values: dict[str, str] = {}
    connections: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("\t")
        if not sep:
            continue
        if key.startswith(CONNECTION_PREFIX):
            count = _int(value)
            if count is not None:
                connections[key.removeprefix(CONNECTION_PREFIX)] = count
        else:
            values[key] = value
    fields_ = {name: _typed(name, values.get(name, ""))
               for name in PgStats.__dataclass_fields__ if name != "connections"}
    return PgStats(**fields_, connections=connections)


def _typed(name: str, text: str) -> int | float | bool | None:
    if name in _BOOLS:
        return {"true": True, "false": False}.get(text)
    if name in _FLOATS:
        return _float(text)
    return _int(text)


def _int(text: str) -> int | None:
    number = _float(text)
    # numeric sums print as "123"; a fractional answer is not a counter.
    return int(number) if number is not None and number.is_integer() else None


def _float(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None
