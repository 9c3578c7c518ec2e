"""One PostgreSQL cluster per host, with its data and WAL on ZFS datasets.

The host's pg_bin_dir says which binaries: the machine's PostgreSQL 15, or a
host-own installation of another major (pgbin.py).

Every command runs inside the host's mount and PID namespaces (nsenter), because
only there are the host's ZFS datasets mounted, and because pg_ctl signals the
PID written in postmaster.pid, which means something only inside the host.
Settings stay stock on purpose: the product under test is the one that should
tune recordsize, compression and PostgreSQL. The only lines written to
postgresql.conf say where the cluster listens, so that a restart by the product
(with plain `pg_ctl restart`) keeps away from the machine's own PostgreSQL on
127.0.0.1 and /var/run/postgresql.

The cluster is owned by the host's pg_os_user: postgres unless `up` was given
another (`owners={3: "pg-admin"}`), which lets tests cover owners that are not
PostgreSQL identifiers. Such a user is a system user of the machine, made by
ensure_os_user the first time it is needed.

A host in Debian's packaged layout (`host.pg_config_file` set) keeps the same data
directory, but its postgresql.conf, pg_hba.conf and pg_ident.conf live in
/etc/postgresql/<major>/main with a conf.d/ (where the listening lines go), as
pg_createcluster lays them out: data_directory, hba_file and ident_file point across,
external_pid_file and cluster_name are set as Debian sets them, and ssl is on with a
key only the owner reads. The postmaster is started as pg_ctlcluster starts it,
`postgres -D <data> -c config_file=/etc/postgresql/<major>/main/postgresql.conf`.
There is no start.conf: postgresql-common did not make this cluster, and there is no
systemd, so whatever restarts it uses pg_ctl.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
from pathlib import Path

from apps.remote.commands import os_user

from . import procs
from .model import Host
from .procs import Proc, in_namespace, run
from .settings import (
    PG_DATA_DATASET,
    PG_DATABASE,
    PG_PORT,
    PG_WAL_DATASET,
    POOL,
    FleetError,
)


def create_cluster(holder: Proc, host: Host) -> Proc:
    """Datasets, initdb, start, pgbench data; the running postmaster."""
    ensure_os_user(host.pg_os_user)
    _create_datasets(holder)
    _prepare_directories(holder, host)
    _initdb(holder, host)
    _configure(holder, host)
    postmaster = start(holder, host)
    _load_pgbench(holder, host)
    return postmaster


def start(holder: Proc, host: Host) -> Proc:
    # pg_ctl puts the postmaster in its own session, so it outlives nsenter; a later
    # `pg_ctl restart` reuses these options (postmaster.opts).
    options = ["-o", f"-c config_file={host.pg_config_file}"] if host.pg_config_file else []
    _as_owner(
        holder,
        host,
        "pg_ctl",
        "-w",
        "-t",
        "60",
        "-D",
        host.pg_data_dir,
        "-l",
        host.pg_log_file,
        *options,
        "start",
    )
    return postmaster(holder, host)


def postmaster(holder: Proc, host: Host) -> Proc:
    pid_file = _seen_from_root(holder, Path(host.pg_data_dir) / "postmaster.pid")
    # The PID in postmaster.pid is the one inside the host's PID namespace.
    pid = procs.outer_pid(holder, int(pid_file.read_text().split()[0]))
    proc = procs.identify(pid) if pid is not None else None
    if proc is None:
        raise FleetError(f"{host.name}: PostgreSQL started but its postmaster is gone")
    return proc


def stop(holder: Proc | None, postmaster_proc: Proc | None, host: Host, marker: str) -> None:
    """pg_ctl stop -m fast inside the host when its holder is given, else the same signal by hand.

    marker is the host directory, taken from where host.json was found rather
    than from its contents: an edited or stale record must never lead to a
    cluster outside this host (such as the machine's own PostgreSQL).
    """
    if not procs.is_ours(postmaster_proc, marker) or not host.pg_data_dir.startswith(marker):
        return
    if holder is not None:
        try:
            _as_owner(
                holder, host, "pg_ctl", "-w", "-t", "60", "-D", host.pg_data_dir, "-m", "fast",
                "stop",
            )
        except FleetError:
            pass  # the namespace may be half gone; SIGINT below is what -m fast sends
    procs.stop(postmaster_proc, marker, sig=signal.SIGINT, grace=30)


def _create_datasets(holder: Proc) -> None:
    # One parent for data and WAL so that `zfs snapshot -r tank/pg@x` is one
    # consistent snapshot of both, on every ZFS dialect.
    for dataset in (f"{POOL}/pg", PG_DATA_DATASET, PG_WAL_DATASET):
        run(in_namespace(holder, ["zfs", "create", dataset]))


def _prepare_directories(holder: Proc, host: Host) -> None:
    user = pwd.getpwnam(host.pg_os_user)
    data_mount = Path(host.pg_data_dir).parent
    wal_mount = Path(host.pg_wal_dir).parent
    for mount in (data_mount, wal_mount):
        os.chown(_seen_from_root(holder, mount), user.pw_uid, user.pw_gid)
    socket_dir = Path(host.pg_socket_dir)
    socket_dir.mkdir(mode=0o755, exist_ok=True)
    os.chown(socket_dir, user.pw_uid, user.pw_gid)
    log_file = Path(host.pg_log_file)
    log_file.touch(mode=0o640)
    os.chown(log_file, user.pw_uid, user.pw_gid)


def _initdb(holder: Proc, host: Host) -> None:
    _as_owner(
        holder,
        host,
        "initdb",
        "-D",
        host.pg_data_dir,
        "--waldir",
        host.pg_wal_dir,
        "--auth-local=peer",
        "--auth-host=scram-sha-256",
        # Fixed rather than inherited from whoever runs `up`, so every host is alike.
        "--encoding=UTF8",
        "--locale=C.UTF-8",
    )


def _configure(holder: Proc, host: Host) -> None:
    listening = (
        "\n# apps/demo/fleet: where this host's cluster listens (nothing else is changed)\n"
        f"listen_addresses = '{host.address}'\n"
        f"port = {PG_PORT}\n"
        f"unix_socket_directories = '{host.pg_socket_dir}'\n"
    )
    data = _seen_from_root(holder, Path(host.pg_data_dir))
    if host.pg_config_file is None:
        with (data / "postgresql.conf").open("a") as out:
            out.write(listening)
        return
    _debian_layout(data, host, listening)


# What pg_createcluster writes into a new cluster's postgresql.conf (Debian 12's
# postgresql-common 248), but for the pid file: /var/run/postgresql is the machine's here.
_DEBIAN_CONF = """
# apps/demo/fleet: Debian's packaged layout, as pg_createcluster writes it
data_directory = '{data}'
hba_file = '{etc}/pg_hba.conf'
ident_file = '{etc}/pg_ident.conf'
external_pid_file = '{socket_dir}/{major}-main.pid'
cluster_name = '{major}/main'
ssl = on
ssl_cert_file = '{etc}/server.crt'
ssl_key_file = '{etc}/server.key'
include_dir = 'conf.d'
"""


def _debian_layout(data: Path, host: Host, listening: str) -> None:
    """Move initdb's configuration files to the host's /etc/postgresql/<major>/main."""
    assert host.etc_postgresql_dir and host.pg_config_file
    user = pwd.getpwnam(host.pg_os_user)
    etc_in_host = Path(host.pg_config_file).parent
    etc = Path(host.etc_postgresql_dir) / etc_in_host.relative_to("/etc/postgresql")
    (etc / "conf.d").mkdir(mode=0o755, parents=True)
    for name in ("postgresql.conf", "pg_hba.conf", "pg_ident.conf"):
        shutil.move(data / name, etc / name)
    with (etc / "postgresql.conf").open("a") as out:
        out.write(_DEBIAN_CONF.format(data=host.pg_data_dir, etc=etc_in_host,
                                      socket_dir=host.pg_socket_dir, major=host.pg_major))
    (etc / "conf.d" / "50-listen.conf").write_text(listening)
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-days", "3650", "-subj",
         f"/CN={host.name}", "-keyout", str(etc / "server.key"), "-out", str(etc / "server.crt")])
    (etc / "server.key").chmod(0o600)
    for path in [etc.parent.parent, etc.parent, etc, *etc.rglob("*")]:
        os.chown(path, user.pw_uid, user.pw_gid)


def _load_pgbench(holder: Proc, host: Host) -> None:
    socket = ["-h", host.pg_socket_dir, "-p", str(PG_PORT)]
    _as_owner(holder, host, "createdb", *socket, PG_DATABASE)
    # Scale 1 (100,000 accounts) keeps `up` fast; tests load more when they need it.
    _as_owner(holder, host, "pgbench", *socket, "-i", "-q", "-s", "1", PG_DATABASE)


def ensure_os_user(name: str) -> None:
    """Create the cluster's owner when the machine lacks it (a host with owner="pg-admin").

    The hosts share the machine's /etc/passwd (only mounts and PIDs are private),
    so this is a system user of the machine: created once, only if missing, with
    no home and no login shell, and left in place by down (other hosts, or a
    later up, may use it; it owns nothing once the host is gone).
    """
    os_user(name)
    try:
        pwd.getpwnam(name)
    except KeyError:
        try:
            run(["useradd", "--system", "--user-group", "--no-create-home",
                 "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name])
        except FleetError:
            pwd.getpwnam(name)  # two hosts starting at once: the other one made it


def _as_owner(holder: Proc, host: Host, program: str, *args: str) -> str:
    argv = ["runuser", "-u", host.pg_os_user, "--", str(Path(host.pg_bin_dir) / program),
            *args]
    return run(in_namespace(holder, argv), timeout=180)


def _seen_from_root(holder: Proc, path: Path) -> Path:
    # /proc/PID/root resolves paths through that process's mount namespace,
    # which is where the ZFS datasets are mounted.
    return Path(f"/proc/{holder.pid}/root") / path.relative_to("/")
