"""The one home of starting, stopping, restarting and reloading a cluster (issue 21):
the command chosen per layout, and the facts that choose it (PgCluster.control)."""

import shlex
from dataclasses import replace

import pytest

from apps.remote.cluster import ClusterTarget
from apps.remote.commands import InvalidValue

FROM_ROOT = ["sh", "-c", 'cd / && exec "$@"', "sh"]
INITDB = ClusterTarget(owner="postgres", bin_dir="/usr/lib/postgresql/17/bin",
                       socket_dir="/var/run/postgresql", port=5432,
                       data_dir="/var/lib/postgresql/17/main")
SYSTEMD = replace(INITDB, unit="postgresql@17-main.service", packaged_as="17/main",
                  config_file="/etc/postgresql/17/main/postgresql.conf")
PG_COMMON = replace(INITDB, packaged_as="17/main",
                    config_file="/etc/postgresql/17/main/postgresql.conf")
EXTERNAL = replace(INITDB, config_file="/etc/postgresql/17/main/postgresql.conf")


@pytest.mark.parametrize("action", ["start", "stop", "restart", "reload"])
def test_a_cluster_systemd_runs_is_controlled_through_its_unit(action):
    command = SYSTEMD.control(action)
    assert shlex.split(command.text) == [*FROM_ROOT, "timeout", "150", "systemctl", action,
                                         "postgresql@17-main"]
    assert command.shown == f"systemctl {action} postgresql@17-main"


@pytest.mark.parametrize(("action", "mode"), [("start", []), ("stop", ["--mode", "fast"]),
                                              ("restart", ["--mode", "fast"]), ("reload", [])])
def test_a_cluster_postgresql_common_manages_without_systemd_uses_pg_ctlcluster(action, mode):
    assert shlex.split(PG_COMMON.control(action).text) == [
        *FROM_ROOT, "timeout", "150", "pg_ctlcluster", *mode, "17", "main", action]


def test_any_other_cluster_uses_pg_ctl_as_its_owner():
    assert shlex.split(INITDB.control("restart").text) == [
        *FROM_ROOT, "runuser", "-u", "postgres", "--", "/usr/lib/postgresql/17/bin/pg_ctl",
        "-D", "/var/lib/postgresql/17/main", "-m", "fast", "-w", "-t", "120", "restart"]


def test_pg_ctl_names_an_outside_configuration_when_it_starts_a_cluster():
    # A restart reuses postmaster.opts; a start after a stop reads none.
    assert shlex.split(EXTERNAL.control("start").text)[-3:] == [
        "-o", "-c config_file=/etc/postgresql/17/main/postgresql.conf", "start"]
    assert "-o" not in shlex.split(EXTERNAL.control("restart").text)


@pytest.mark.parametrize("bad", [{"unit": "sshd.service"}, {"unit": "postgresql@17-main;id"},
                                 {"packaged_as": "17"}, {"packaged_as": "17/main x"},
                                 {"config_file": "/etc/pg conf/postgresql.conf"},
                                 {"config_file": "etc/postgresql.conf"}])
def test_control_facts_are_checked_when_the_target_is_made(bad):
    with pytest.raises(InvalidValue):
        replace(INITDB, **bad)


def test_an_unknown_action_is_refused():
    with pytest.raises(InvalidValue):
        SYSTEMD.control("status")


def test_the_state_an_operation_keeps_makes_the_same_target():
    assert ClusterTarget.of(**SYSTEMD.as_state()) == SYSTEMD


@pytest.mark.django_db
@pytest.mark.parametrize(("has_systemd", "unit", "pg_ctlcluster", "chosen"), [
    (True, "postgresql@17-main.service", True, "systemctl"),
    (False, "postgresql@17-main.service", True, "pg_ctlcluster"),  # a unit seen, no PID 1
    (False, "", True, "pg_ctlcluster"),
    (True, "", False, "pg_ctl"),
    (False, "", False, "pg_ctl"),
])
def test_the_cluster_row_chooses_from_discoverys_facts(has_systemd, unit, pg_ctlcluster,
                                                        chosen):
    from apps.fleet.models import Host, PgCluster

    host = Host.objects.create(name="deb", address="192.0.2.1",
                               facts={"has_systemd": has_systemd})
    cluster = PgCluster.objects.create(
        host=host, data_dir="/var/lib/postgresql/17/main", port=5432, owner="postgres",
        bin_dir="/usr/lib/postgresql/17/bin", socket_dir="/var/run/postgresql",
        config_file="/etc/postgresql/17/main/postgresql.conf", packaged_as="17/main",
        systemd_unit=unit, pg_ctlcluster=pg_ctlcluster)
    words = shlex.split(cluster.target().control("restart").text)
    assert chosen in {word.rsplit("/", 1)[-1] for word in words}
    assert cluster.external_configuration
