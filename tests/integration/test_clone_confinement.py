"""A clone is a sandbox, not a door to the host (issue 19 §1), on a real test host.

The role a customer logs in with cannot reach superuser, server programs or server
files whatever the origin's roles say (CREATEROLE, a membership of
pg_execute_server_program, direct or through another role), yet may run DDL in the
clone's databases (issue 20 §3). And the clone's own superuser, reached over the
clone's socket as PoZoL reaches it, cannot read the origin's data directory nor write
into another clone's: the clone's PostgreSQL runs as an OS user of its own. Checked
with plain psql over OpenSSH and TCP, independently of the product's code."""

from __future__ import annotations

import secrets
import subprocess

import pytest

from apps.clones import services
from apps.clones.models import Clone
from apps.ops.models import Operation
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_clones import host  # noqa: F401  the fixture
from tests.integration.test_snapshots import psql, run_anyway

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

ROLES = ("appadmin", "appvia", "appmid")


@pytest.fixture
def hostile_roles(host):  # noqa: F811
    """Roles an application may well have on its production cluster: one with
    CREATEROLE, one that reaches pg_execute_server_program and pg_signal_backend through
    another role."""
    fleet_host, row = host
    psql(fleet_host, "CREATE ROLE appadmin NOLOGIN CREATEROLE; CREATE ROLE appmid NOLOGIN; "
                     "GRANT pg_execute_server_program, pg_read_server_files TO appmid; "
                     "CREATE ROLE appvia NOLOGIN IN ROLE appmid; "
                     "GRANT pg_signal_backend TO appvia")
    yield fleet_host, row
    for clone in Clone.objects.exclude(state=Clone.State.DESTROYED):
        drive(services.destroy_clone(clone))
    run_anyway(fleet_host, f"cd / && runuser -u {fleet_host.pg_os_user} -- "
                           f"{fleet_host.pg_bin_dir}/psql -X -h {fleet_host.pg_socket_dir} "
                           f"-p {fleet_host.pg_port} -d postgres -c "
                           f"'DROP ROLE IF EXISTS {', '.join(ROLES)}'")


def as_role(clone: dict, password: str, sql: str, database: str = "postgres"
            ) -> subprocess.CompletedProcess:
    """psql from this machine, over TCP, as the clone's role with its password."""
    url = (f"postgresql://{clone['role']}:{password}@{clone['connection_string'].split('@')[1]}"
           .rsplit("/", 1)[0] + f"/{database}")
    return subprocess.run(["psql", url, "-XAt", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          capture_output=True, text=True, timeout=30)


def test_a_customers_role_never_reaches_server_programs_but_runs_ddl(api, hostile_roles):
    fleet_host, row = hostile_roles
    made = api.post("/api/clones/", {"cluster": row.clusters.get().pk, "name": "exploit",
                                     "role": "appadmin"}, format="json")
    assert made.status_code == 202, made.content
    answer = made.json()
    operation = drive(Operation.objects.get(pk=answer["operation"]["id"]))
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    clone = api.get(f"/api/clones/{answer['clone']['id']}/").json()
    password = answer["password"]

    # The exploit of issue 19: CREATEROLE grants itself the server-program role.
    marker = f"/tmp/pozol-exploit-{secrets.token_hex(4)}"
    granted = as_role(clone, password, "GRANT pg_execute_server_program TO appadmin")
    assert granted.returncode != 0, "appadmin granted itself pg_execute_server_program"
    ran = as_role(clone, password, f"COPY (SELECT 1) TO PROGRAM 'id > {marker}'")
    assert ran.returncode != 0 and "must be superuser" in ran.stderr, ran.stderr
    assert run_anyway(fleet_host, f"ls {marker}").strip() == ""
    attributes = as_role(clone, password, "SELECT rolsuper, rolcreaterole, rolreplication, "
                                          "rolbypassrls FROM pg_roles "
                                          "WHERE rolname = current_user")
    assert attributes.stdout.strip() == "f|f|f|f", attributes.stderr

    # Issue 20: a developer runs their migrations on the clone.
    for database in ("postgres", fleet_host.pg_database):
        ddl = as_role(clone, password, "CREATE TABLE migrated (id int); "
                                       "ALTER TABLE migrated ADD COLUMN note text; "
                                       "CREATE INDEX ON migrated (note); "
                                       "INSERT INTO migrated VALUES (1, 'x'); "
                                       "SELECT count(*) FROM migrated", database)
        assert ddl.returncode == 0 and ddl.stdout.split()[-1] == "1", ddl.stderr

    # A role that reaches the dangerous roles through another role loses that path.
    via, operation, via_password = services.create_clone(row, row.clusters.get(),
                                                         snapshot=clone["snapshot"],
                                                         name="exploit2", role="appvia")
    assert drive(operation).status == Operation.Status.SUCCEEDED
    shown = {"role": via.role, "connection_string": Clone.objects.get(
        pk=via.pk).connection_string}
    reach = as_role(shown, via_password, "SELECT pg_has_role('pg_execute_server_program', "
                                         "'MEMBER'), pg_has_role('pg_read_server_files', "
                                         "'MEMBER'), pg_has_role('pg_signal_backend', "
                                         "'MEMBER'), pg_has_role('appmid', 'MEMBER')")
    assert reach.stdout.strip() == "f|f|f|t", reach.stderr  # appmid's own rights stay
    ran = as_role(shown, via_password, f"COPY (SELECT 1) TO PROGRAM 'id > {marker}'")
    assert ran.returncode != 0 and "must be superuser" in ran.stderr, ran.stderr
    read = as_role(shown, via_password, "SELECT pg_read_file('/etc/hostname')")
    assert read.returncode != 0 and "permission denied" in read.stderr.lower(), read.stderr
    assert run_anyway(fleet_host, f"ls {marker}").strip() == ""


def clone_superuser(fleet_host, clone: Clone, sql: str) -> tuple[bool, str]:
    """(ok, output) of `sql` run by the clone's superuser over the clone's own socket,
    as PoZoL gets in: as the owner by peer where the socket directory lets the owner's
    OS user in (before confinement), else as root naming the owner."""
    socket, bin_dir, owner = clone.layout["socket_dir"], fleet_host.pg_bin_dir, \
        fleet_host.pg_os_user
    client = f"{bin_dir}/psql -X -At -v ON_ERROR_STOP=1 -h {socket} -p {clone.port} " \
             f"-U {owner} -d postgres"
    done = run_anyway(fleet_host, (
        f"cd / && if runuser -u {owner} -- test -x {socket}; then "
        f"runuser -u {owner} -- {client} -c \"{sql}\" 2>&1; "
        f"else {client} -c \"{sql}\" 2>&1; fi; echo \"exit=$?\""))
    output, _, code = done.rstrip().rpartition("exit=")
    return code == "0", output.strip()


def test_a_clones_superuser_cannot_reach_the_origin_or_another_clone(hostile_roles):
    fleet_host, row = hostile_roles
    cluster = row.clusters.get()
    first, operation, _ = services.create_clone(row, cluster, name="boxed1")
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    first.refresh_from_db()
    other, operation, _ = services.create_clone(row, cluster, snapshot=first.snapshot,
                                                name="boxed2")
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    other.refresh_from_db()
    other_mount = run_on(fleet_host, "zfs get -H -o value mountpoint "
                                     "tank/pozol_clones/boxed2/data").strip()
    origin_conf = f"{fleet_host.pg_data_dir}/postgresql.auto.conf"

    ok, out = clone_superuser(fleet_host, first, "SELECT current_setting('is_superuser')")
    assert ok and out == "on", out
    ok, out = clone_superuser(fleet_host, first, "SELECT length(pg_read_file("
                                                 "'postgresql.auto.conf')) > 0")
    assert ok and out == "t", out  # its own files, yes

    ok, out = clone_superuser(fleet_host, first, f"SELECT pg_read_file('{origin_conf}')")
    assert not ok and "Permission denied" in out, out
    ok, out = clone_superuser(fleet_host, first,
                              f"COPY (SELECT 1) TO PROGRAM 'cat {origin_conf}'")
    assert not ok and "failed" in out, out
    ok, out = clone_superuser(fleet_host, first, f"COPY (SELECT 1) TO "
                                                 f"'{other_mount}/pgdata/pozol-intruder'")
    assert not ok and "Permission denied" in out, out
    ok, out = clone_superuser(fleet_host, first, f"COPY (SELECT 1) TO PROGRAM "
                                                 f"'touch {other_mount}/pozol-intruder'")
    assert not ok, out
    assert "pozol-intruder" not in run_on(fleet_host, f"ls -a {other_mount} "
                                                      f"{other_mount}/pgdata")
    ok, out = clone_superuser(fleet_host, first, "SELECT pg_read_file("
                                                 f"'{other_mount}/pgdata/postgresql.auto.conf')")
    assert not ok and "Permission denied" in out, out

    # Each clone's PostgreSQL runs as an OS user of its own, owning only its files.
    uids = {}
    for clone in (first, other):
        mount = run_on(fleet_host, f"zfs get -H -o value mountpoint "
                                   f"tank/pozol_clones/{clone.name}/data").strip()
        pid = run_on(fleet_host, f"head -n 1 {mount}/pgdata/postmaster.pid").strip()
        uids[clone.name] = run_on(fleet_host, f"ps -o uid= -p {pid}").strip()
        assert uids[clone.name] == run_on(fleet_host, f"stat -c %u {mount}/pgdata").strip()
    postgres_uid = run_on(fleet_host, f"id -u {fleet_host.pg_os_user}").strip()
    assert len(set(uids.values()) | {postgres_uid}) == 3, uids

    # What the clone's superuser leaves running dies with the clone.
    # The program reads its row first: a shell that exits before COPY writes makes
    # PostgreSQL fail on a broken pipe.
    ok, out = clone_superuser(fleet_host, first, "COPY (SELECT 1) TO PROGRAM "
                                                 "'cat > /dev/null; "
                                                 "sleep 300 > /dev/null 2>&1 &'")
    assert ok, out
    assert uids["boxed1"] in run_on(fleet_host, "ps -e -o uid=").split()
    assert drive(services.destroy_clone(first)).status == Operation.Status.SUCCEEDED
    assert uids["boxed1"] not in run_on(fleet_host, "ps -e -o uid=").split()


def test_a_uid_in_use_is_refused_and_discovery_lives_with_confined_clones(hostile_roles):
    """A process of the uid the next clone would get (here one this test starts) makes
    the script refuse before anything is made; once it is gone the clone is made. A
    discovery with that clone running (its postmaster's user has no name) succeeds."""
    from apps.fleet import services as fleet_services

    fleet_host, row = hostile_roles
    cluster = row.clusters.get()
    uid = 1_900_000_000 + 6500  # the default base plus the first port of the range
    squatter = run_on(fleet_host, f"cd / && {{ setpriv --reuid={uid} --regid={uid} "
                                  "--clear-groups -- sleep 120 < /dev/null > /dev/null 2>&1 "
                                  "& echo $!; }").strip()
    try:
        clone, operation, _ = services.create_clone(row, cluster, name="squatted")
        operation = drive(operation)
        assert operation.status == Operation.Status.FAILED
        assert f"uid {uid} runs processes on this host" in operation.error
        assert "pozol_clones/squatted" not in run_on(fleet_host, "zfs list -H -o name")
    finally:
        run_anyway(fleet_host, f"kill {int(squatter)}")
    drive(services.destroy_clone(Clone.objects.get(pk=clone.pk)))

    clone, operation, _ = services.create_clone(row, cluster, name="unsquatted")
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    assert drive(fleet_services.discover(row)).status == Operation.Status.SUCCEEDED
