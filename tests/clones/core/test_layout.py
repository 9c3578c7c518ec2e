"""What a clone must not share with its origin, and hostile values refused before any
command exists."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from apps.clones.core import commands
from apps.clones.core.layout import CloneError, Layout, Origin, clone_name
from apps.remote.commands import InvalidValue

ORIGIN = Origin(data_dataset="tank/pg/data", data_mountpoint="/mnt/pg/data",
                data_dir="/mnt/pg/data/pgdata", wal_dataset="tank/pg/wal",
                wal_mountpoint="/mnt/pg/wal", wal_dir="/mnt/pg/wal/pg_wal")


def layout(**changes) -> Layout:
    values = {"origin": ORIGIN, "name": "dev1", "snapshot": "pozol_manual_20261123T120000Z",
              "port": 6500, "listen": "10.0.0.5", "allowed": ("10.0.0.0/24",),
              "role": "dev", "socket_dir": "/var/lib/pozol/clones/dev1", **changes}
    return Layout(**values)


def test_a_clone_lives_under_the_pool_and_keeps_the_origins_paths_below_its_mounts():
    made = layout()
    assert (made.data_clone, made.wal_clone) == ("tank/pozol_clones/dev1/data",
                                                 "tank/pozol_clones/dev1/wal")
    assert (made.data_below, made.wal_below) == ("pgdata", "pg_wal")
    assert made.connection_string() == "postgresql://dev@10.0.0.5:6500/postgres"


def test_the_stored_form_reads_back_as_the_same_layout():
    made = layout(os_uid=1_900_006_500)
    stored = json.loads(json.dumps(made.stored()))  # as a JSONField keeps it
    assert stored["allowed"] == ["10.0.0.0/24"] and stored["origin"]["wal_dataset"]
    assert Layout.from_stored(stored) == made


def test_what_a_copy_must_not_share_is_overridden_last():
    conf = layout().auto_conf()
    for line in ("port = '6500'", "archive_mode = 'off'", "archive_command = ''",
                 "primary_conninfo = ''", "max_replication_slots = '0'",
                 "shared_buffers = '128MB'", "listen_addresses = '10.0.0.5'"):
        assert line in conf


def test_only_the_owner_by_socket_and_the_role_from_allowed_networks_get_in():
    hba = layout(allowed=("10.0.0.0/24", "192.168.1.7")).hba().splitlines()[1:]
    assert hba == ["local all postgres peer",
                   "host all dev 10.0.0.0/24 scram-sha-256",
                   "host all dev 192.168.1.7/32 scram-sha-256"]


def test_a_confined_clone_runs_as_its_own_uid_and_lets_the_owner_in_by_socket_only():
    confined = layout(os_uid=1_900_006_500, allowed=())
    assert confined.hba().splitlines()[1:] == ["local all postgres trust"]
    assert confined.server_user() == ["setpriv", "--reuid=1900006500", "--regid=1900006500",
                                      "--clear-groups", "--"]
    assert confined.client_user() == []  # root, naming the owner role
    text = commands.create(confined, "Abcdefghij0123456789").text
    assert "chown -R 1900006500:1900006500" in text and "setpriv" in text
    assert "runuser" not in text and "runuser" not in commands.destroy(confined).text
    assert "awk -v u=1900006500" in commands.destroy(confined).text  # its leftovers die
    # A clone made before confinement keeps its owner and peer.
    assert layout().server_user() == ["runuser", "-u", "postgres", "--"]
    assert "local all postgres peer" in layout().hba()
    assert "kill" not in commands.destroy(layout()).text  # the owner's uid is production's


def test_the_role_sql_strips_every_way_to_the_host():
    sql = commands.create(layout(), "Abcdefghij0123456789").stdin.decode()
    assert "NOSUPERUSER NOCREATEROLE NOREPLICATION NOBYPASSRLS" in sql
    for role in ("pg_execute_server_program", "pg_read_server_files", "pg_write_server_files",
                 "pg_signal_backend"):
        assert role in sql
    assert "REVOKE %I FROM %I GRANTED BY %I CASCADE" in sql
    assert "RAISE EXCEPTION" in sql  # what the revocations missed fails the clone
    assert "ALTER DATABASE %I OWNER TO %I" in sql  # DDL in its databases


FAKES = {
    "getent": '#!/bin/sh\n[ "$1 $2" = "$TAKEN" ]\n',
    "ps": '#!/bin/sh\necho "    0"; echo " $RUNNING"\n',
    "find": "#!/bin/sh\necho $OWNED\n",
    "zfs": '#!/bin/sh\n[ "$1" = clone ] && echo cloned >&2 && exit 1; echo /\n',
}


@pytest.mark.parametrize("env, refusal", [
    ({"TAKEN": "passwd 1900006500"}, "is a user or group of this host"),
    ({"TAKEN": "group 1900006500"}, "is a user or group of this host"),
    ({"RUNNING": "1900006500"}, "runs processes on this host"),
    ({"OWNED": "/tank/pozol_clones/old/data"}, "owns /tank/pozol_clones/old/data"),
    ({"RUNNING": "19000065000"}, "cloned"),  # another uid: the script goes on to clone
])
def test_a_uid_someone_has_is_refused_before_anything_is_made(tmp_path, env, refusal):
    for name, text in FAKES.items():
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(0o755)
    command = commands.create(layout(os_uid=1_900_006_500), "Abcdefghij0123456789")
    done = subprocess.run(["sh", "-c", command.text], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "TAKEN": "", "RUNNING": "1",
                                           "OWNED": "", **env,
                                           "PATH": f"{tmp_path}:{os.environ['PATH']}"})
    assert done.returncode == 1 and refusal in done.stderr, done.stderr


@pytest.mark.parametrize("name", ["a;b", "$(id)", "-x", "Dev", "a b", "x" * 41, ""])
def test_hostile_clone_names_are_refused(name):
    with pytest.raises(CloneError):
        clone_name(name)


@pytest.mark.parametrize("changes", [
    {"snapshot": "a@b"}, {"snapshot": "a/b"}, {"port": 80}, {"role": "dev; drop"},
    {"listen": "not-an-address"}, {"allowed": ("10.0.0.0/99",)},
    {"socket_dir": "relative/path"}, {"os_uid": 0}, {"os_uid": 1000}, {"os_uid": 2**31},
])
def test_bad_layout_values_are_refused(changes):
    with pytest.raises((CloneError, InvalidValue, ValueError)):
        layout(**changes)


def test_data_outside_its_dataset_is_refused():
    with pytest.raises(CloneError, match="not on tank/pg/data"):
        Origin(data_dataset="tank/pg/data", data_mountpoint="/mnt/pg/data",
               data_dir="/elsewhere/pgdata")


def test_the_password_travels_on_stdin_only():
    command = commands.create(layout(), "Abcdefghij0123456789")
    assert "Abcdefghij0123456789" not in command.text
    assert b"\\set pw 'Abcdefghij0123456789'" in command.stdin
    assert "Abcdefghij0123456789" not in command.redacted()
    with pytest.raises(CloneError):
        commands.create(layout(), "short'quote")


FAKE_ZFS = """\
#!/bin/sh
# The clone's root is listed once; by the time this run destroys it, another run (the
# first attempt, whose worker died) has: "does not exist".
case "$1" in
  get) exit 1 ;;
  list) [ -e "$STATE/root" ] ;;
  destroy) rm -f "$STATE/root"; echo "cannot open '$3': dataset does not exist" >&2; exit 1 ;;
esac
"""


def test_destroy_ends_well_when_another_run_destroyed_the_clone_meanwhile(tmp_path):
    """The destroy script, run by sh against a stand-in `zfs`: losing the race to the
    first attempt's script is success, and the socket directory goes too."""
    bin_dir, state, sockets = tmp_path / "bin", tmp_path / "state", tmp_path / "sockets"
    for directory in (bin_dir, state, sockets):
        directory.mkdir()
    (bin_dir / "zfs").write_text(FAKE_ZFS)
    (bin_dir / "zfs").chmod(0o755)
    (state / "root").touch()
    (sockets / ".s.PGSQL.6500.lock").touch()
    command = commands.destroy(layout(socket_dir=str(sockets)))
    done = subprocess.run(["sh", "-c", command.text], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "STATE": str(state),
                                           "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert not sockets.exists()
