"""The one way to reach a PostgreSQL cluster: its command shapes, checked strictly."""

import shlex

import pytest

from apps.remote import alter_system
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import InvalidValue
from apps.tuning import appliers
from tests.remote.fakeshell import FakeShell

PG_ADMIN = ClusterTarget(owner="pg-admin", bin_dir="/usr/lib/postgresql/15/bin",
                         socket_dir="/run/pg", port=5433, data_dir="/tank/pg/data/pgdata")
FROM_ROOT = ["sh", "-c", 'cd / && exec "$@"', "sh"]


def test_a_hyphenated_owner_is_a_valid_target_everywhere():
    # The tuning path once checked owners as PostgreSQL identifiers and refused this.
    assert shlex.split(PG_ADMIN.pg_ctl("restart").text) == [
        *FROM_ROOT, "runuser", "-u", "pg-admin", "--", "/usr/lib/postgresql/15/bin/pg_ctl",
        "-D", "/tank/pg/data/pgdata", "-m", "fast", "-w", "-t", "120", "restart"]


@pytest.mark.parametrize("bad", [
    {"owner": "root;id"}, {"owner": "-u"}, {"owner": ""}, {"owner": None},
    {"socket_dir": ""}, {"socket_dir": "run/pg"}, {"port": 0}, {"port": "5432"},
    {"bin_dir": "/b in"}, {"data_dir": "/x/../etc"}, {"database": "Bad"}])
def test_every_value_is_checked_when_the_target_is_made(bad):
    values = {"owner": "postgres", "bin_dir": "/b", "socket_dir": "/s", "port": 5432, **bad}
    with pytest.raises(InvalidValue):
        ClusterTarget(**values)


def test_sql_with_variables_goes_on_stdin_and_the_log_shows_it_with_its_values():
    shell = FakeShell()
    command = alter_system.write(PG_ADMIN, {"work_mem": "64MB"})
    shell.on(command)
    appliers.write_pg(shell, PG_ADMIN, "work_mem", "64MB")
    assert shlex.split(shell.calls[0]) == [
        *FROM_ROOT, "timeout", "30", "runuser", "-u", "pg-admin", "--",
        "/usr/lib/postgresql/15/bin/psql", "-h", "/run/pg", "-p", "5433", "-X", "-At",
        "-F", "\t", "-v", "ON_ERROR_STOP=1", "-d", "postgres",
        "--set=name0=work_mem", "--set=value0=64MB"]
    assert shell.stdins == [command.stdin]
    assert command.stdin.decode().startswith('alter system set :"name0" = :\'value0\';')
    assert command.redacted() == ('psql -d postgres  (as pg-admin): alter system set '
                                  '"work_mem" = \'64MB\'; select pg_reload_conf();')


def test_the_logged_sql_quotes_values_as_the_server_would():
    command = alter_system.write(PG_ADMIN, {"search_path": "a', b"})
    assert "= 'a'', b';" in command.redacted()


def test_sql_without_variables_is_passed_with_c_so_it_runs_in_a_bundle():
    command = PG_ADMIN.psql("select 1")
    assert command.stdin is None
    assert shlex.split(command.text)[-2:] == ["-c", "select 1"]
