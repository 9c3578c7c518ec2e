"""A restore drill's check query cannot harm the host, outlast its limit or reach
production, on a real test host (issue 19 section 4).

The check query is the operator's text and runs in the drill's clone, whose owner is a
superuser: the query runs as a role the drill makes there, which reads every table and
can run no program, write no file and no table; a wall-clock limit on the host stops a
query that lifted its own statement_timeout. Databases whose names psql would read as
connection strings are checked in the clone, as the databases they are.
"""

from __future__ import annotations

import secrets
import shlex

import pytest

from apps.drills.core import check
from apps.drills.models import DrillRun, DrillSchedule
from tests.integration.conftest import run_on
from tests.integration.test_drills import drill, host, snapshot_now  # noqa: F401 (fixture)
from tests.integration.test_snapshots import run_anyway

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

ROWS = "pozol_rights_rows"
LOOKS_LIKE_HTML = "<img src=x>"
QUOTED = "it's a \\ name\non two lines"  # conninfo's quote and escape, and a newline


def sql(fleet_host, text: str, database: str = "postgres") -> str:
    return run_on(fleet_host, (
        f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/psql -X -At "
        f"-v ON_ERROR_STOP=1 -h {fleet_host.pg_socket_dir} -p {fleet_host.pg_port} "
        f"-d {shlex.quote(database)} -c {shlex.quote(text)}")).strip()


@pytest.fixture
def rows(host):  # noqa: F811 (the fixture imported above)
    """A three-row table in every database (template1 too, so new ones have it)."""
    fleet_host, row = host
    existing = sql(fleet_host, "SELECT datname FROM pg_database WHERE datallowconn").split()
    for database in existing:
        sql(fleet_host, f"CREATE TABLE {ROWS} AS SELECT generate_series(1, 3) AS i", database)
    yield fleet_host, row
    for database in existing:
        sql(fleet_host, f"DROP TABLE IF EXISTS {ROWS}", database)


@pytest.fixture
def databases(rows):
    """Databases named as a connection string to production's own socket, as markup,
    and with a quote, a backslash and a newline."""
    fleet_host, row = rows
    # psql -d reads it as the production socket, its database the OS user's (postgres).
    to_production = f"host={fleet_host.pg_socket_dir} port={fleet_host.pg_port}"
    assert len(to_production) <= 63  # NAMEDATALEN would cut it
    names = [to_production, LOOKS_LIKE_HTML, QUOTED]
    for name in names:
        sql(fleet_host, f'CREATE DATABASE "{name}"')
    yield fleet_host, row, to_production
    for name in names:
        run_anyway(fleet_host, (
            f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/psql -X "
            f"-h {fleet_host.pg_socket_dir} -p {fleet_host.pg_port} -d postgres -c "
            + shlex.quote(f'DROP DATABASE IF EXISTS "{name}"')))


def schedule_of(api, row) -> int:
    snapshot_now(row)
    created = api.post("/api/drill-schedules/", {"host": row.pk,
                                                 "cluster": row.clusters.get().pk},
                       format="json")
    assert created.status_code == 201, created.content
    return created.json()["id"]


def drill_with(api, schedule: int, query: str) -> dict:
    DrillSchedule.objects.filter(pk=schedule).update(check_query=query)
    return drill(api, schedule)


def test_every_database_is_checked_in_the_clone_by_its_name(api, databases):
    """A database named like a connection string answers with the clone's port, not
    production's; one named like markup is checked as any other."""
    fleet_host, row, to_production = databases
    schedule = schedule_of(api, row)
    passed = drill_with(api, schedule, "SELECT current_setting('port') || ' ' || "
                                       f"(SELECT count(*) FROM {ROWS})")
    assert passed["status"] == "passed", passed["error"]
    clone_port = f"{DrillRun.objects.get(pk=passed['id']).port} 3"
    assert passed["answers"].get(to_production) == clone_port, passed["answers"]
    assert passed["answers"][LOOKS_LIKE_HTML] == clone_port
    assert passed["answers"][QUOTED.replace("\n", " ")] == clone_port
    assert passed["answers"]["postgres"] == clone_port


def test_a_check_query_runs_as_a_role_that_cannot_harm_the_host(api, rows, monkeypatch):
    fleet_host, row = rows
    schedule = schedule_of(api, row)
    reads = drill_with(api, schedule, f"SELECT count(*) FROM {ROWS}")
    assert reads["status"] == "passed", reads["error"]
    assert set(reads["answers"].values()) == {"3"}  # it reads every table

    marker = f"/tmp/pozol-rights-{secrets.token_hex(8)}"
    unlock = "SET default_transaction_read_only = off; COMMIT; "
    exploits = {
        f"COPY (SELECT 1) TO PROGRAM 'id > {marker}'": "pg_execute_server_program",
        f"DO $$ BEGIN EXECUTE 'COPY (SELECT 1) TO PROG' || 'RAM ''id > {marker}'''; "
        "END $$": "pg_execute_server_program",
        f"{unlock}COPY (SELECT 1) TO '{marker}'": "pg_write_server_files",
        "SELECT pg_read_file('postgresql.auto.conf')": "permission denied",
        f"{unlock}CREATE TABLE pozol_rights_new (i int)": "permission denied",
        f"{unlock}CREATE TEMP TABLE pozol_rights_tmp (i int)": "permission denied",
        f"{unlock}INSERT INTO {ROWS} VALUES (4)": "permission denied",
        "ALTER SYSTEM SET work_mem = '1MB'": "permission denied",
        "RESET ROLE; SET ROLE postgres": "permission denied",
    }
    for query, why in exploits.items():
        failed = drill_with(api, schedule, query)
        assert failed["status"] == "failed", query
        assert "the check query failed" in failed["error"] and why in failed["error"], \
            (query, failed["error"])
        assert run_on(fleet_host, f"test -e {marker} && echo made || echo none").strip() \
            == "none", query

    # A query that lifts its own statement_timeout is stopped on the host all the same.
    monkeypatch.setattr(check, "CHECK_SECONDS", 2)
    stopped = drill_with(api, schedule, "SET statement_timeout = 0; SELECT pg_sleep(250)")
    assert stopped["status"] == "failed"
    assert f"{check.TIMED_OUT} {2 + check.GRACE_SECONDS} s" in stopped["error"], \
        stopped["error"]
    assert stopped["check_seconds"] < 30

    again = drill_with(api, schedule, "")
    assert again["status"] == "passed", again["error"]
    assert int(again["answers"]["postgres"]) > 1000
