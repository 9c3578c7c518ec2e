"""The per-cluster statistics query: which views each server version is asked."""

from __future__ import annotations

import pytest

from apps.telemetry.core.pgstats import stats_query


@pytest.mark.parametrize(("version", "present", "absent"), [
    (100023, {"pg_stat_bgwriter", "SELECT checkpoints_req FROM", "pg_current_wal_lsn"},
     {"pg_stat_wal ", "pg_stat_checkpointer"}),
    (140011, {"pg_stat_wal", "pg_stat_bgwriter"}, {"pg_stat_checkpointer"}),
    (160004, {"pg_stat_wal", "pg_stat_bgwriter"}, {"pg_stat_checkpointer"}),
    (170002, {"pg_stat_wal", "pg_stat_checkpointer", "num_requested"},
     {"pg_stat_bgwriter", "SELECT checkpoints_req FROM"}),
    (180000, {"pg_stat_wal", "pg_stat_checkpointer"}, {"pg_stat_bgwriter"}),
])
def test_views_by_server_version(version, present, absent):
    query = stats_query(version)
    assert all(name in query for name in present)
    assert not any(name in query for name in absent)


def test_every_version_answers_the_same_keys_for_what_it_has():
    keys = {v: {part.split("'")[1] for part in stats_query(v).split(" UNION ALL ")}
            for v in (130000, 170000)}
    assert keys[170000] - keys[130000] == {"wal_records", "wal_fpi", "wal_bytes",
                                           "wal_buffers_full"}


def test_pg_current_wal_lsn_is_only_asked_outside_recovery():
    # It raises "recovery is in progress" on a standby: every use sits behind the check.
    for part in stats_query(160004).split(" UNION ALL "):
        if "pg_current_wal_lsn()" in part:
            assert "pg_is_in_recovery()" in part
