"""up, status and down for a whole fleet in one state directory."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
from collections.abc import Callable, Collection, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace

from . import keys, pgbin
from .host import host_dirs, host_status, pool_file_size, start_host, stop_host
from .model import Host, HostStatus, Layout
from .preflight import check_debian_layout, check_free, check_machine, make_mount_points
from .settings import (
    PG_OS_USER,
    PG_PORT,
    SSH_USER,
    FleetConfig,
    FleetError,
    check_host_count,
    resolve_config,
)

log = logging.getLogger("apps.demo.fleet")

PathLike = str | os.PathLike[str] | None


def up(
    hosts: int = 2,
    state_dir: PathLike = None,
    subnet: str | None = None,
    port: int | None = None,
    listen: str | None = None,
    owners: Mapping[int, str] | None = None,
    *,
    pool_size: int | str | None = None,
    majors: Mapping[int, int] | None = None,
    debian: Collection[int] = (),
    logins: Mapping[int, str] | None = None,
    first: int = 1,
) -> list[Host]:
    """Bring hosts first..first+hosts-1 up (1..hosts by default); hosts already up are left
    alone. Returns those hosts.

    owners names the OS user owning the PostgreSQL cluster of a host, by index
    (`{3: "pg-admin"}`); postgres when not named. A missing user is created.
    majors names a host's PostgreSQL major the same way (`{9: 18}`); 15, the
    machine's, when not named (another comes from npm: apps/demo/fleet/pgbin.py).
    debian: the hosts (by index) whose cluster is in Debian's packaged layout: its
    configuration in /etc/postgresql/<major>/main (the host's own, bound over the
    machine's /etc/postgresql), started with `-c config_file=` as pg_ctlcluster does.
    logins names the user a host is reached as, when not root (`{4: "pozol"}`): an
    ordinary user with sudo, who exists in that host only (apps/demo/fleet/login.py).
    first: the number of the first host, so that a second fleet on the same
    subnet (hosts first..first+hosts-1) stays off the addresses of the first.

    With listen (one host only), its sshd binds that address instead of the
    host's loopback address; the returned address stays the loopback one,
    where PostgreSQL listens.

    pool_size: bytes of each new host's sparse pool file, an int or "4G"
    (K/M/G/T, 1024-based); env POZOL_FLEET_POOL_SIZE; default 1 GiB. A host
    already up with another size is refused: its pool cannot be resized.
    """
    cfg = resolve_config(state_dir, subnet, port, listen, pool_size)
    check_host_count(hosts, listen)
    if not 1 <= first <= 255 - hosts:
        raise FleetError(f"hosts {first} to {first + hosts - 1} do not fit in a /24 (1 to 254)")
    check_machine()
    for major in (majors or {}).values():
        pgbin.check(major)
    if debian:
        check_debian_layout()
    created = not cfg.state_dir.exists()
    cfg.state_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
    try:
        with _locked(cfg):
            _claim(cfg)
            result = _bring_up(cfg, range(first, first + hosts), owners or {}, majors or {},
                               frozenset(debian), logins or {})
            _write_known_hosts(cfg)
            return result
    except BaseException:
        if created and not host_dirs(cfg):
            shutil.rmtree(cfg.state_dir, ignore_errors=True)
        raise


def status(state_dir: PathLike = None) -> list[HostStatus]:
    """Every host recorded in the state dir, with which of its processes still run.

    A host's address is the one clients dial: what advertise() recorded for it
    (serve's --advertise), else its loopback address.
    """
    cfg = resolve_config(state_dir)
    dialled = _advertised(cfg)
    found = (host_status(layout) for layout in host_dirs(cfg))
    return [replace(s, address=dialled.get(s.name, s.address)) for s in found if s is not None]


def advertise(state_dir: PathLike, name: str, address: str) -> None:
    """Record that clients reach host name at address (a name such as demo-host, or
    serve's --listen), for status and the fleet's known_hosts; its record keeps its
    loopback address, where its PostgreSQL listens."""
    cfg = resolve_config(state_dir)
    with _locked(cfg):
        cfg.advertised.write_text(json.dumps({**_advertised(cfg), name: address}) + "\n")
        _write_known_hosts(cfg)


def down(state_dir: PathLike = None, *, keep_keys: bool = False) -> list[str]:
    """Stop every host of the fleet and remove the state dir. Returns the host names.

    keep_keys (serve, whose state dir is a container's volume): remove only the
    hosts' directories, keeping the client key and the hosts' keys, so that the
    host comes back with the keys the control plane pinned. A state dir that is a
    mount point (a volume) is emptied, not removed: the kernel refuses (EBUSY).
    """
    cfg = resolve_config(state_dir)
    if not cfg.state_dir.exists():
        return []
    if not cfg.marker.exists() and any(cfg.state_dir.iterdir()):
        raise FleetError(f"{cfg.state_dir} is not a fleet state dir (no fleet.json); not removing")
    with _locked(cfg):
        layouts = host_dirs(cfg)
        _in_parallel(stop_host, layouts)
        if not keep_keys:
            _remove_state_dir(cfg)
    return [layout.root.name for layout in layouts]


def _remove_state_dir(cfg: FleetConfig) -> None:
    if not os.path.ismount(cfg.state_dir):
        shutil.rmtree(cfg.state_dir)
        return
    for path in cfg.state_dir.iterdir():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _claim(cfg: FleetConfig) -> None:
    """Mark the directory as this fleet's, refusing one that belongs to something else."""
    wanted: dict[str, object] = {"subnet": cfg.subnet, "ssh_port": cfg.ssh_port}
    if cfg.listen is not None:
        wanted["listen"] = cfg.listen
    if cfg.marker.exists():
        recorded = json.loads(cfg.marker.read_text())
        if recorded != wanted and host_dirs(cfg):
            listen = f" listen {recorded['listen']}" if "listen" in recorded else ""
            raise FleetError(
                f"{cfg.state_dir} holds a fleet on subnet {recorded['subnet']} port "
                f"{recorded['ssh_port']}{listen}; run down first or use another --state-dir"
            )
    elif any(p.name != ".lock" for p in cfg.state_dir.iterdir()):
        raise FleetError(f"{cfg.state_dir} is not empty and not a fleet state dir")
    cfg.marker.write_text(json.dumps(wanted) + "\n")
    # PostgreSQL runs as its own user and must reach its data and socket below here.
    cfg.state_dir.chmod(0o755)


def _bring_up(cfg: FleetConfig, indexes: range, owners: Mapping[int, str],
              majors: Mapping[int, int], debian: frozenset[int] = frozenset(),
              logins: Mapping[int, str] | None = None) -> list[Host]:
    wanted = [(i, Layout(cfg.host_dir(cfg.host_name(i)))) for i in indexes]
    todo = [(i, layout) for i, layout in wanted if not _is_up(layout)]
    starting = {i for i, _ in todo}
    _check_pool_sizes(cfg, [layout for i, layout in wanted if i not in starting])
    for _, layout in todo:
        if layout.root.exists():
            log.info("%s: cleaning up what a previous run left", layout.root.name)
            stop_host(layout)
    for i, _ in todo:
        check_free(cfg.ssh_listen(i), cfg.ssh_port, "ssh")
        check_free(cfg.address(i), PG_PORT, "postgresql")
    if todo:
        _prepare_fleet(cfg)
    _start_all(cfg, [i for i, _ in todo], owners, majors, debian, logins or {})
    return [_host(layout) for _, layout in wanted]


def _check_pool_sizes(cfg: FleetConfig, running: list[Layout]) -> None:
    if cfg.pool_size is None:
        return  # not asked for: whatever the running hosts have is fine
    for layout in running:
        size = pool_file_size(layout)
        if size is not None and size != cfg.pool_size:
            raise FleetError(f"{layout.root.name} is up with a {size}-byte pool, not "
                             f"{cfg.pool_size}; run down first to change the pool size")


def _start_all(cfg: FleetConfig, indexes: list[int], owners: Mapping[int, str],
               majors: Mapping[int, int], debian: frozenset[int] = frozenset(),
               logins: Mapping[int, str] | None = None) -> None:
    """Start hosts in parallel; if any fails, take down every host this call started."""
    logins = logins or {}
    with ThreadPoolExecutor(max_workers=max(1, len(indexes))) as pool:
        futures = [pool.submit(start_host, cfg, i, owners.get(i, PG_OS_USER),
                               majors.get(i, pgbin.DEFAULT_MAJOR), i in debian,
                               logins.get(i, SSH_USER))
                   for i in indexes]
    errors = [f.exception() for f in futures if f.exception() is not None]
    if not errors:
        return
    _in_parallel(stop_host, [Layout(cfg.host_dir(cfg.host_name(i))) for i in indexes])
    raise FleetError("; ".join(str(e) for e in errors))


def _prepare_fleet(cfg: FleetConfig) -> None:
    make_mount_points()
    keys.ensure_key(cfg.client_key, "pozol-fleet-client")
    cfg.authorized_keys.write_text(keys.public_key(cfg.client_key) + "\n")


def _write_known_hosts(cfg: FleetConfig) -> None:
    lines = [
        keys.known_hosts_line(s.address, s.port, s.host_public_key) for s in status(cfg.state_dir)
    ]
    cfg.known_hosts.write_text("".join(f"{line}\n" for line in lines))


def _advertised(cfg: FleetConfig) -> dict[str, str]:
    try:
        return json.loads(cfg.advertised.read_text())
    except FileNotFoundError:
        return {}


def _is_up(layout: Layout) -> bool:
    found = host_status(layout)
    return found is not None and found.up


def _host(layout: Layout) -> Host:
    found = host_status(layout)
    if found is None or not found.up:
        raise FleetError(f"{layout.root.name} is not up")
    return Host(**{k: v for k, v in found.to_dict().items() if k not in ("alive", "up")})


def _in_parallel(action: Callable[[Layout], None], layouts: list[Layout]) -> None:
    if not layouts:
        return
    with ThreadPoolExecutor(max_workers=len(layouts)) as pool:
        futures = [pool.submit(action, layout) for layout in layouts]
    errors = [str(f.exception()) for f in futures if f.exception() is not None]
    if errors:
        raise FleetError("; ".join(errors))


@contextmanager
def _locked(cfg: FleetConfig) -> Iterator[None]:
    # One up/down at a time per state dir; the lock lives inside it so that
    # nothing is written outside the state dir.
    with open(cfg.state_dir / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
