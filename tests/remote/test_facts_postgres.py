"""PostgreSQL facts: postmasters, postmaster.pid, pg_settings rows, dataset mapping."""

from apps.remote.facts import postgres
from tests.remote.fixtures.hosts import fuse_extra, fuse_section, read


def test_postmasters_but_not_their_children():
    found = postgres.find_postmasters(postgres.parse_ps(read("openzfs-2.2/ps.txt")))
    assert [(p.pid, p.user) for p in found] == [(1500, "postgres")]


def test_captured_postmaster_and_nothing_named_like_it():
    found = postgres.find_postmasters(postgres.parse_ps(fuse_section("ps")))
    assert [p.program for p in found] == ["/usr/lib/postgresql/15/bin/postgres"]
    assert postgres.find_postmasters(postgres.parse_ps(read("plain/ps.txt"))) == []


def test_postmaster_pid_captured():
    pid = postgres.parse_postmaster_pid(fuse_section("pg_311_pidfile"))
    assert pid.pid == 311 and pid.port == 5499 and pid.status == "ready"
    assert pid.data_dir.endswith("/pgdata") and pid.socket_dir == "/tmp/pozol-capture/sock"
    assert pid.listen_addresses == "127.0.0.1"
    assert "311" in fuse_extra("postmaster_pid")


def test_postmaster_pid_short_file():
    pid = postgres.parse_postmaster_pid("42\n/data\n")
    assert (pid.pid, pid.data_dir, pid.port, pid.socket_dir) == (42, "/data", None, None)


def test_captured_settings():
    settings = postgres.parse_settings(fuse_section("psql_311"))
    by_name = {s.name: s for s in settings}
    assert by_name["shared_buffers"].unit == "8kB"
    assert by_name["shared_buffers"].context == "postmaster"
    assert postgres.setting_value(settings, "data_checksums") == "on"
    assert postgres.setting_value(settings, "server_version_num").startswith("15")
    assert len(settings) > 300


def test_settings_rows_with_a_stray_tab_are_dropped():
    good = "work_mem\t4096\tkB\tuser\tinteger\tdefault\t4096\tf"
    settings = postgres.parse_settings(good + "\nbroken\tvalue\twith\textra\ttab\n")
    assert [s.name for s in settings] == ["work_mem"] and settings[0].pending_restart is False


def test_pending_restart_and_null_unit():
    settings = postgres.parse_settings(read("openzfs-2.2/psql_1500.txt"))
    by_name = {s.name: s for s in settings}
    assert by_name["shared_buffers"].pending_restart is True
    assert by_name["data_checksums"].unit is None


def test_dataset_for_path_is_the_longest_whole_component_prefix():
    mounts = {"tank": "/tank", "tank/pg": "/tank/pg", "tank/pgx": "/tank/pgx", "root": "/"}
    assert postgres.dataset_for_path("/tank/pg/data", mounts) == "tank/pg"
    assert postgres.dataset_for_path("/tank/pgx", mounts) == "tank/pgx"
    assert postgres.dataset_for_path("/tank/pgdata", mounts) == "tank"
    assert postgres.dataset_for_path("/etc", mounts) == "root"
    assert postgres.dataset_for_path("/etc", {"tank": "/tank"}) is None
    assert postgres.dataset_for_path(None, mounts) is None


# -- replication and checkpoints: captured on a fleet test host (extra/psql_stats_busy.txt)

def _captured(name: str) -> str:
    """An extra capture's output, without its `$ command` and `# exit` lines."""
    return fuse_extra(name).split("\n", 2)[2]


def test_captured_standby_slots_and_requested_checkpoints():
    stats = postgres.parse_stats(_captured("psql_stats_busy"))
    assert stats.in_recovery is False and stats.standbys == 1
    assert stats.slots == [postgres.ReplicationSlot("pozol_standby", "physical", True),
                           postgres.ReplicationSlot("pozol_spare", "physical", False)]
    assert (stats.checkpoints_timed, stats.checkpoints_requested) == (0, 19)
    assert stats.stats_reset == "2026-11-23 22:02:34.01879+00"


def test_stats_missing_rows_are_unknown_not_zero():
    stats = postgres.parse_stats("in_recovery\tt\nstandbys\t\nslot\tbroken\n")
    assert stats == postgres.ServerStats()  # "t" is not psql's text for a boolean cast


def test_checkpoint_counters_moved_in_17():
    assert "pg_stat_bgwriter" in postgres.stats_query(16)
    assert "checkpoints_req" in postgres.stats_query(None)  # unknown: the older view
    query = postgres.stats_query(17)
    assert "pg_stat_checkpointer" in query and "num_requested" in query
    assert "pg_stat_bgwriter" not in query
    assert [postgres.major_of(v) for v in ("15", "9.6", None, "")] == [15, 9, None, None]
