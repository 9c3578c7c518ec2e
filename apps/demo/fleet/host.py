"""The life of one test host: start it, tell whether it runs, take it down.

A host is a private mount namespace and a private PID namespace (with its own
/proc), held open by the holder: PID 1 of that PID namespace, a process that
only reaps orphans, like init. Inside run the host's zfs-fuse daemon (private
tmpfs over the directories zfs-fuse hard-codes, so its zpool.cache and control
socket are its own), its sshd, and its PostgreSQL. Its /etc/sysctl.d and
/etc/modprobe.d are bind mounts of copies in its host directory, so what the
product persists there stays the host's and never reaches the machine's /etc.
Commands that arrive over the host's ssh see only its pool and its processes
(`ps -e` lists nothing of other hosts or of the machine). Killing the holder
makes the kernel kill every process of the host, which is how down ends it
once PostgreSQL and the pool are cleanly stopped.
"""

from __future__ import annotations

import logging
import shutil
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

from . import keys, login, pgbin, postgres, procs
from .model import Host, HostStatus, Layout, Record
from .preflight import ETC_POSTGRESQL, PRIVATE_ETC_DIRS, SSHD, ZFS_MOUNT_POINTS
from .procs import Proc, in_namespace, run
from .settings import (
    PG_DATA_DATASET,
    PG_DATABASE,
    PG_OS_USER,
    PG_PORT,
    PG_WAL_DATASET,
    POOL,
    POOL_SIZE,
    SSH_USER,
    FleetConfig,
    FleetError,
)

log = logging.getLogger("apps.demo.fleet")

# The namespace holder, PID 1 of the host: it only reaps the orphans adopted
# by it (daemons started with setsid -f, a postmaster after pg_ctl exits), so
# no zombie lingers in the host's `ps`. The kernel drops signals that the
# PID 1 of a namespace has no handler for, SIGTERM included, so down ends it
# with SIGKILL. Its last argument is the host's marker.
HOLD = """import os, time
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.2)
"""
UNSHARE = ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private"]


def start_host(cfg: FleetConfig, index: int, owner: str = PG_OS_USER,
               major: int = pgbin.DEFAULT_MAJOR, debian: bool = False,
               login_user: str = SSH_USER) -> Host:
    """Create and start host number index; its record is saved at every step.

    Its host key is made once and kept until the fleet's down, so a host
    rebuilt over a killed one (or by serve after a restart) keeps it.

    owner is the OS user that owns the host's PostgreSQL cluster (see
    postgres.ensure_os_user for a user other than postgres); major its
    PostgreSQL major (see pgbin.py for another than 15); debian puts its
    configuration in /etc/postgresql/<major>/main, as Debian's packages do;
    login_user the user PoZoL reaches it as (see login.py for another than root).
    """
    layout = Layout(cfg.host_dir(cfg.host_name(index)))
    layout.root.mkdir(mode=0o755)
    record = Record(host=describe(cfg, index, layout, owner, major, debian, login_user))
    record.save(layout)
    started = time.monotonic()
    holder = _start_namespace(layout, record)
    _start_zfs(holder, layout, record, cfg.pool_size or POOL_SIZE)
    _start_sshd(cfg, index, holder, layout, record)
    _started(record, layout, "postgres", postgres.create_cluster(holder, record.host))
    log.info(
        "%s up at %s in %.1fs", record.host.name, record.host.address, time.monotonic() - started
    )
    return record.host


def describe(cfg: FleetConfig, index: int, layout: Layout, owner: str = PG_OS_USER,
             major: int = pgbin.DEFAULT_MAJOR, debian: bool = False,
             login_user: str = SSH_USER) -> Host:
    """The host's connection facts; makes its host key and, for another major than 15,
    its PostgreSQL installation."""
    layout.host_key.parent.mkdir(mode=0o700, exist_ok=True)
    keys.ensure_key(layout.host_key, f"pozol-fleet-{cfg.host_name(index)}")
    public = keys.public_key(layout.host_key)
    data_mount = layout.mnt / "pg" / "data"
    wal_mount = layout.mnt / "pg" / "wal"
    return Host(
        name=cfg.host_name(index),
        address=cfg.address(index),
        port=cfg.ssh_port,
        user=login_user,
        login_user=login_user,
        private_key_path=str(cfg.client_key),
        known_hosts_path=str(cfg.known_hosts),
        host_key_fingerprint=keys.fingerprint(public),
        host_public_key=public,
        pools=[POOL],
        pg_port=PG_PORT,
        pg_bin_dir=str(pgbin.install(major, layout.root)),
        pg_major=major,
        pg_os_user=owner,
        pg_socket_dir=str(layout.socket_dir),
        # initdb wants a directory of its own, not the dataset's mount point.
        pg_data_dir=str(data_mount / "pgdata"),
        pg_wal_dir=str(wal_mount / "pg_wal"),
        pg_data_dataset=PG_DATA_DATASET,
        pg_wal_dataset=PG_WAL_DATASET,
        pg_database=PG_DATABASE,
        pg_log_file=str(layout.pg_log),
        work_dir=str(layout.work_dir),
        etc_sysctl_dir=_etc_backing(layout, PRIVATE_ETC_DIRS[0]),
        etc_modprobe_dir=_etc_backing(layout, PRIVATE_ETC_DIRS[1]),
        authorized_keys_path=str(cfg.authorized_keys),
        pg_config_file=(str(ETC_POSTGRESQL / str(major) / "main" / "postgresql.conf")
                        if debian else None),
        etc_postgresql_dir=str(layout.etc_dir / ETC_POSTGRESQL.name) if debian else None,
        etc_sudoers_file=None if login_user == SSH_USER else str(login.sudoers_file(layout)),
    )


def _etc_backing(layout: Layout, machine_dir: Path) -> str | None:
    """The host's copy of machine_dir, or None if the machine has no such directory."""
    return str(layout.etc_dir / machine_dir.name) if machine_dir.is_dir() else None


def pool_file_size(layout: Layout) -> int | None:
    """The size of the host's pool file (its pool's size), None if there is none."""
    try:
        return layout.disk.stat().st_size
    except FileNotFoundError:
        return None


def host_status(layout: Layout) -> HostStatus | None:
    record = Record.load(layout)
    if record is None:
        return None
    alive = {name: procs.is_ours(proc, layout.marker) for name, proc in record.procs.items()}
    if alive.get("namespace") and alive.get("postgres") is False:
        alive["postgres"] = _follow_restarted_postmaster(layout, record)
    return HostStatus(**record.host.to_dict(), alive=alive)


def _follow_restarted_postmaster(layout: Layout, record: Record) -> bool:
    """A tuning apply or a test may restart PostgreSQL with pg_ctl: the host is
    still up, with a new postmaster. Record it, so that up leaves the host alone
    (rebuilding it would lose its data) and down stops the live one."""
    try:
        current = postgres.postmaster(record.procs["namespace"], record.host)
    except (FleetError, OSError, ValueError, IndexError):
        return False
    if not procs.is_ours(current, layout.marker):
        return False
    record.procs["postgres"] = current
    record.save(layout)
    return True


def stop_host(layout: Layout) -> None:
    """Stop what up recorded for this host, in reverse order, then delete its directory.

    Works on leftovers too: dead processes are skipped, and a PID that now
    belongs to another process is left alone (see procs.is_ours).
    """
    record = Record.load(layout)
    if record is not None:
        _stop_processes(layout, record)
    shutil.rmtree(layout.root, ignore_errors=True)
    if layout.root.exists():
        raise FleetError(f"could not remove {layout.root}")


def _start_namespace(layout: Layout, record: Record) -> Proc:
    holder_argv = [sys.executable, "-S", "-c", HOLD, layout.marker]
    # unshare stays as the holder's parent, outside the namespace, and exits
    # with it; --kill-child takes the holder down if unshare is killed.
    argv = [*UNSHARE, "--kill-child", "--", *holder_argv]
    # Recorded until the holder is found, so that an up killed now leaves a PID to stop.
    launcher = _started(record, layout, "namespace", procs.spawn(argv, layout.log("namespace")))
    found: list[Proc] = []
    _wait_until(lambda: _holder_ready(launcher, found), 10, record, "namespace", layout)
    holder = _started(record, layout, "namespace", found[0])
    for path in ZFS_MOUNT_POINTS:
        tmpfs = ["mount", "-t", "tmpfs", "-o", "mode=0755,size=16m", "pozol-fleet", str(path)]
        run(in_namespace(holder, tmpfs))
    _private_etc(holder, layout, record.host)
    _plain_root_shell(holder, layout)
    login.add_login(holder, layout, record.host)
    layout.work_dir.mkdir(mode=0o755)
    return holder


def _private_etc(holder: Proc, layout: Layout, host: Host) -> None:
    """Bind-mount the host's copies over /etc/sysctl.d and /etc/modprobe.d, in its namespace.

    The copies start as the machine's files, so the host looks like the
    machine. A directory the machine lacks is skipped: creating a mount point
    for it would change the machine's /etc, which the fleet never touches.
    """
    backing = {PRIVATE_ETC_DIRS[0]: host.etc_sysctl_dir, PRIVATE_ETC_DIRS[1]: host.etc_modprobe_dir}
    layout.etc_dir.mkdir(mode=0o755)
    for machine_dir, copy in backing.items():
        if copy is None:
            log.info("%s: the machine has no %s, so the host has none", host.name, machine_dir)
            continue
        try:
            # symlinks=True: a link such as 99-sysctl.conf -> ../sysctl.conf
            # stays a link, resolved inside the host as on the machine.
            shutil.copytree(machine_dir, copy, symlinks=True)
        except OSError as exc:
            raise FleetError(f"cannot copy {machine_dir} for {host.name}: {exc}") from None
        # in_namespace refuses a holder still in the machine's namespaces.
        run(in_namespace(holder, ["mount", "--bind", copy, str(machine_dir)]))
    if host.etc_postgresql_dir:
        # Empty but for the host's own cluster (postgres.py fills it): the machine's
        # clusters are not the host's.
        Path(host.etc_postgresql_dir).mkdir(mode=0o755)
        run(in_namespace(holder, ["mount", "--bind", host.etc_postgresql_dir,
                                  str(ETC_POSTGRESQL)]))


# sshd runs each command through the login's shell; root's is bash, which reads
# ~/.bashrc when sshd starts it. A new Debian server's /root/.bashrc is base-files'
# dot.bashrc, which does nothing; the machine's may do a lot (one seen here ran
# `pyenv init`: 0.2-0.4 s added to every command of every host, and to every round
# trip a benchmark compares with a floor of fewer). So the host gets Debian's own.
ROOT_BASHRC = Path("/root/.bashrc")
DEBIAN_ROOT_BASHRC = Path("/usr/share/base-files/dot.bashrc")


def _plain_root_shell(holder: Proc, layout: Layout) -> None:
    """Bind-mount Debian's stock root .bashrc (or an empty file) over the machine's,
    in the host's namespace; a machine without one is left alone, nothing created."""
    if not ROOT_BASHRC.is_file():
        return
    stock = DEBIAN_ROOT_BASHRC.read_text() if DEBIAN_ROOT_BASHRC.is_file() else ""
    copy = layout.root_bashrc
    copy.write_text(stock)
    copy.chmod(0o644)
    run(in_namespace(holder, ["mount", "--bind", str(copy), str(ROOT_BASHRC)]))


def _holder_ready(launcher: Proc, found: list[Proc]) -> bool:
    # Only once unshare's child has exec'd the holder are the new namespaces,
    # the private propagation and the host's own /proc in place; a mount made
    # earlier could leak out.
    for pid in procs.children(launcher.pid):
        proc = procs.identify(pid)
        exec_done = procs.cmdline(pid).startswith(sys.executable)
        if proc is not None and exec_done and procs.has_own_namespace(proc):
            found.append(proc)
            return True
    return False


def _start_zfs(holder: Proc, layout: Layout, record: Record, pool_size: int) -> None:
    # --pidfile is not written with --no-daemon, but it puts the marker in
    # the daemon's command line.
    argv = ["zfs-fuse", "--no-daemon", "--pidfile", str(layout.zfs_pid_file)]
    _started(record, layout, "zfs_fuse", _spawn_in(holder, argv, layout, "zfs-fuse"))
    _wait_until(lambda: _zpool_answers(holder), 30, record, "zfs_fuse", layout)
    try:
        with layout.disk.open("wb") as disk:
            disk.truncate(pool_size)  # sparse: takes no space until written
    except OSError as exc:
        raise FleetError(f"cannot make a {pool_size}-byte pool file {layout.disk}: "
                         f"{exc.strerror}") from None
    # -m keeps every mount point under the state dir; nothing appears at /tank.
    run(in_namespace(holder, ["zpool", "create", "-m", str(layout.mnt), POOL, str(layout.disk)]))


def _start_sshd(cfg: FleetConfig, index: int, holder: Proc, layout: Layout, record: Record) -> None:
    host = record.host
    options = {
        # The host's own loopback address, unless serve asked for another.
        "ListenAddress": f"{cfg.ssh_listen(index)}:{host.port}",
        "HostKey": str(layout.host_key),
        "PidFile": str(layout.sshd_pid_file),
        "AuthorizedKeysFile": str(cfg.authorized_keys),
        "PermitRootLogin": "prohibit-password",
        "PasswordAuthentication": "no",
        "KbdInteractiveAuthentication": "no",
        "UsePAM": "no",
        # StrictModes would refuse authorized_keys under a world-writable /tmp.
        "StrictModes": "no",
        "Subsystem": "sftp internal-sftp",
    }
    argv = [str(SSHD), "-D", "-e", "-f", "/dev/null"]
    for key, value in options.items():
        argv += ["-o", f"{key}={value}"]
    _started(record, layout, "sshd", _spawn_in(holder, argv, layout, "sshd"))
    dial = cfg.ssh_dial(index)
    _wait_until(lambda: _ssh_banner(dial, host.port), 15, record, "sshd", layout)


def _stop_processes(layout: Layout, record: Record) -> None:
    found = {
        name: proc for name, proc in record.procs.items() if procs.is_ours(proc, layout.marker)
    }
    namespace = found.get("namespace")
    # The recorded namespace process may still be unshare itself, if up was
    # killed before the holder was found; it is not a way into the host.
    holder = namespace if namespace and procs.has_own_namespace(namespace) else None
    postgres.stop(holder, found.get("postgres"), record.host, layout.marker)
    if holder is not None and "zfs_fuse" in found:
        _export_pool(holder, record.host.name)
    # PID 1 of the namespace: the kernel kills every other process of the host
    # (zfs-fuse, sshd, ssh sessions, what they started) before it is gone.
    # SIGKILL, because a namespace's PID 1 ignores signals it has no handler for.
    procs.stop(namespace, layout.marker, sig=signal.SIGKILL)
    # Normally already gone with their namespace; stopped one by one only if
    # a record somehow outlived it.
    procs.stop(found.get("zfs_fuse"), layout.marker)
    procs.stop(found.get("sshd"), layout.marker)


def _spawn_in(holder: Proc, argv: list[str], layout: Layout, name: str) -> Proc:
    try:
        return procs.spawn_in(holder, argv, layout.log(name), layout.marker)
    except FleetError as exc:
        raise FleetError(f"{exc}: {_tail(layout.log(name))}") from None


def _export_pool(holder: Proc, name: str) -> None:
    try:
        run(in_namespace(holder, ["zpool", "export", POOL]), timeout=60)
    except FleetError as exc:
        log.warning("%s: zpool export failed, stopping zfs-fuse anyway: %s", name, exc)


def _started(record: Record, layout: Layout, name: str, proc: Proc) -> Proc:
    record.procs[name] = proc
    record.save(layout)
    return proc


def _zpool_answers(holder: Proc) -> bool:
    try:
        run(in_namespace(holder, ["zpool", "list"]), timeout=10)
    except FleetError:
        return False
    return True


def _ssh_banner(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=2) as conn:
            return conn.recv(16).startswith(b"SSH-")
    except OSError:
        return False


def _wait_until(
    ready: Callable[[], bool], timeout: float, record: Record, process: str, layout: Layout
) -> None:
    """Poll until ready, failing early (with the log to read) if the process died."""
    what = f"{process} of {record.host.name}"
    deadline = time.monotonic() + timeout
    while not ready():
        if not procs.is_ours(record.procs[process], layout.marker):
            raise FleetError(f"{what} exited: {_tail(layout.log(process.replace('_', '-')))}")
        if time.monotonic() > deadline:
            raise FleetError(f"{what} not ready after {timeout}s")
        time.sleep(0.1)


def _tail(log_file: Path) -> str:
    # Quoted in the error because a failed up removes the host directory.
    try:
        return " | ".join(log_file.read_text(errors="replace").strip().splitlines()[-5:])
    except FileNotFoundError:
        return "(no log)"


def is_host_dir(name: str) -> bool:
    return name.startswith("host") and name[4:].isdigit()


def host_dirs(cfg: FleetConfig) -> list[Layout]:
    if not cfg.state_dir.is_dir():
        return []
    names = sorted(
        (p.name for p in cfg.state_dir.iterdir() if is_host_dir(p.name)), key=lambda n: int(n[4:])
    )
    return [Layout(cfg.state_dir / n) for n in names]
