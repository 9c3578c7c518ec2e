"""Command templates: validation refuses hostile names; quoting keeps any value inert."""

import shlex

import pytest

from apps.remote import commands
from apps.remote.commands import InvalidValue, cmd, script

HOSTILE = ["; rm -rf /", "$(touch /tmp/x)", "`id`", "a'b", 'a"b', "a\nb", "a b", "..",
           "../etc", "-rf", "ünï", "a&&b", "a|b", "a>b", "", "a\tb", "a\x00b"]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("validator", [
    commands.dataset_name, commands.snapshot_name, commands.pool_name, commands.pg_identifier,
    commands.sysctl_name, commands.module_param_name, commands.unit_name, commands.abs_path,
    commands.zfs_property, commands.os_user])
def test_hostile_values_are_refused_by_every_validator(validator, value):
    with pytest.raises(InvalidValue):
        validator(value)


@pytest.mark.parametrize("value", HOSTILE)
def test_any_value_that_got_through_is_one_inert_argument(value):
    command = cmd("printf", "%s", value)
    assert shlex.split(command.text) == ["printf", "%s", value]


@pytest.mark.parametrize(("validator", "value"), [
    (commands.dataset_name, "tank/pg/data"), (commands.dataset_name, "tank/a.b:c-d_e"),
    (commands.snapshot_name, "tank/pg@pozol-2026-11-21T06:00"),
    (commands.pool_name, "tank"), (commands.pg_identifier, "pgbench"),
    (commands.sysctl_name, "vm.dirty_background_bytes"),
    (commands.module_param_name, "zfs_txg_timeout"), (commands.unit_name, "pgbench-42"),
    (commands.abs_path, "/var/lib/postgresql/15/main"), (commands.zfs_property, "pozol:owner"),
    (commands.os_user, "postgres"), (commands.os_user, "pg-admin"),
])
def test_ordinary_names_pass(validator, value):
    assert validator(value) == value


def test_reserved_pool_names_are_refused():
    for name in ("mirror", "raidz2", "log", "c0t0d0", "1tank"):
        with pytest.raises(InvalidValue):
            commands.pool_name(name)


def test_script_quotes_values_and_keeps_the_template():
    command = script("zfs get -Hp {props} {ds} | head -n {n}",
                     props="recordsize", ds="tank/x y", n=3)
    assert command.text == "zfs get -Hp recordsize 'tank/x y' | head -n 3"


def test_secrets_are_redacted_however_they_were_quoted():
    for secret in ("s3cret", "it's-secret", "a b"):
        command = cmd("psql", f"password={secret}", secrets=(f"password={secret}",))
        assert secret not in command.redacted() and "***" in command.redacted()


@pytest.mark.parametrize("name", [
    "postgres", "host=/run/other port=5432", "<img src=x>", "it's", "back\\slash",
    "trailing\\", "'", "postgresql://evil/db", "  spaced  ", "tab\there", "new\nline",
    "ünïcode"])
def test_a_database_name_becomes_a_conninfo_libpq_reads_as_that_one_name(name):
    from psycopg.conninfo import conninfo_to_dict  # libpq's own parser (PQconninfoParse)

    assert conninfo_to_dict(commands.dbname_conninfo(name)) == {"dbname": name}


@pytest.mark.parametrize("name", ["", None, 5, "a\x00b", "x" * 64, "é" * 32])
def test_a_database_name_that_cannot_exist_is_refused(name):
    with pytest.raises(commands.InvalidValue):
        commands.dbname_conninfo(name)
