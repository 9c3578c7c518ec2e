"""The per-major settings tables (captured from each major's real server) and how
profiles and plans use them: the union without a host, the host's own major with one."""

from __future__ import annotations

import pytest

from apps.remote.facts.postgres import Setting
from apps.tuning.core import evaluate, pgsettings
from apps.tuning.core.planner import plan
from apps.tuning.core.profiles import ProfileSettings
from tests.tuning.core import hosts
from tests.tuning.core.hosts import cluster

NEWER = {"io_method": "worker", "io_workers": "4", "summarize_wal": "on"}


def test_every_supported_major_has_a_captured_table():
    for major in pgsettings.MAJORS:
        table = pgsettings.table(major)
        version = table["server_version_num"]
        assert version.min_val // 10000 == major  # the table is that major's own server
        assert table["work_mem"].unit == "kB" and table["shared_buffers"].unit == "8kB"
        assert "data_checksums" in table  # an internal row describe-config omits
    with pytest.raises(KeyError):
        pgsettings.table(12)


def test_settings_come_and_go_with_the_major():
    assert pgsettings.majors_with("io_method") == (18,)
    assert pgsettings.majors_with("io_workers") == (18,)
    assert pgsettings.majors_with("summarize_wal") == (17, 18)
    assert pgsettings.majors_with("vacuum_defer_cleanup_age") == (13, 14, 15)
    assert pgsettings.majors_with("old_snapshot_threshold") == (13, 14, 15, 16)
    assert pgsettings.table(18)["io_method"].enumvals == ("sync", "worker")
    assert pgsettings.table(15)["maintenance_work_mem"].min_val == 1024
    assert pgsettings.table(18)["maintenance_work_mem"].min_val == 64


def test_a_profile_takes_the_settings_of_newer_majors():
    settings = ProfileSettings.from_dict({"postgres": NEWER})
    assert settings.postgres == NEWER
    # removed after 15, still valid for the 13-15 hosts a profile may go to
    assert ProfileSettings.from_dict({"postgres": {"vacuum_defer_cleanup_age": "0"}})


@pytest.mark.parametrize("data, message", [
    ({"io_method": "threads"}, "'threads' is not one of sync, worker, io_uring"),
    ({"io_workers": "64"}, "io_workers: '64' is above the maximum, 32"),
    ({"no_such_knob": "1"}, "no_such_knob: no such setting in PostgreSQL 13 to 18"),
])
def test_a_profile_is_refused_what_no_supported_major_takes(data, message):
    with pytest.raises(ValueError, match=message):
        ProfileSettings.from_dict({"postgres": data})


def test_io_uring_counts_as_an_io_method_though_the_npm_build_lacks_it():
    assert ProfileSettings.from_dict({"postgres": {"io_method": "io_uring"}})


def test_the_missing_message_names_the_major_and_those_that_have_it():
    assert pgsettings.missing("io_method", 15) == \
        "PostgreSQL 15 has no setting io_method; PostgreSQL 18 has it"
    assert pgsettings.missing("summarize_wal", 16) == \
        "PostgreSQL 16 has no setting summarize_wal; PostgreSQL 17 to 18 have it"
    assert pgsettings.missing("old_snapshot_threshold", 17) == \
        "PostgreSQL 17 has no setting old_snapshot_threshold; PostgreSQL 13 to 16 have it"
    assert pgsettings.missing("summarize_wal", 17) is None
    assert pgsettings.missing("pg_stat_statements.max", 13) is None


def _on_major(major: int, extra: dict[str, tuple[str, str | None, str, str]]):
    """The real PG 15 capture with its server version, and the rows `extra` names, edited
    to another major's (the unit test of one step; the PG 18 test host proves it for real)."""
    facts = hosts.fuse()
    pg = cluster(facts)
    pg.server_version_num, pg.version = major * 10000 + 4, f"{major}.4"
    pg.settings = [row for row in pg.settings if row.name not in extra] + [
        Setting(name, value, unit, context, vartype, "default", value, False)
        for name, (value, unit, context, vartype) in extra.items()]
    return facts


ROWS_18 = {"io_method": ("worker", None, "postmaster", "enum"),
           "io_workers": ("3", None, "sighup", "integer"),
           "summarize_wal": ("off", None, "sighup", "bool")}


def test_the_plan_refuses_on_15_what_15_lacks_naming_the_major():
    changes = {c.key: c for c in plan(hosts.fuse(), ProfileSettings.from_dict(
        {"postgres": NEWER})).changes}
    assert not any(c.supported for c in changes.values())
    assert changes["io_method"].reason == \
        "PostgreSQL 15 has no setting io_method; PostgreSQL 18 has it"
    assert changes["summarize_wal"].reason == \
        "PostgreSQL 15 has no setting summarize_wal; PostgreSQL 17 to 18 have it"


@pytest.mark.parametrize("major, keys", [(17, ["summarize_wal"]), (18, list(NEWER))])
def test_the_plan_takes_on_17_and_18_what_they_have(major, keys):
    facts = _on_major(major, {k: ROWS_18[k] for k in keys})
    settings = ProfileSettings.from_dict({"postgres": {k: NEWER[k] for k in keys}})
    assert evaluate.problems(facts, settings) == []
    changes = {c.key: c for c in plan(facts, settings).changes}
    assert all(changes[k].supported for k in keys if k in changes)
    assert changes["summarize_wal"].method == "pg_reload"
    if major == 18:
        assert changes["io_workers"].desired == "4" and "io_method" not in changes  # already


def test_limits_come_from_the_hosts_own_major():
    settings = ProfileSettings.from_dict({"postgres": {"maintenance_work_mem": "512kB"}})
    on_15 = evaluate.problems(hosts.fuse(), settings)
    assert on_15 == ["postgres.maintenance_work_mem: 512kB is below the minimum, 1MB"]
    on_18 = _on_major(18, {"maintenance_work_mem": ("65536", "kB", "user", "integer")})
    assert evaluate.problems(on_18, settings) == []


def test_without_the_hosts_rows_its_majors_table_decides():
    settings = ProfileSettings.from_dict({"postgres": {"maintenance_work_mem": "512kB"}})
    found = {}
    for major in (15, 18):
        facts = _on_major(major, {})
        cluster(facts).settings = []
        found[major] = evaluate.problems(facts, settings)
    assert found == {15: ["postgres.maintenance_work_mem: 512kB is below the minimum, 1MB"],
                     18: []}
