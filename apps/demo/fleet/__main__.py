"""Command line: python -m apps.demo.fleet up|status|down|serve (see __init__.py)."""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import signal
import socket
import sys
import threading
import time

from .fleet import advertise, down, status, up
from .model import Host, HostStatus
from .settings import FleetError, resolve_config

log = logging.getLogger("apps.demo.fleet")

POOL_SIZE_HELP = ("size of each new host's sparse pool file: bytes or K/M/G/T such as 4G "
                  "(default 1G; env POZOL_FLEET_POOL_SIZE)")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="fleet: %(message)s", stream=sys.stderr)
    try:
        return args.run(args)
    except FleetError as exc:
        print(f"fleet: error: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m apps.demo.fleet", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="{up,status,down,serve}")
    cmd_up = commands.add_parser("up", help="start hosts 1..N (idempotent)")
    cmd_up.add_argument("--hosts", type=int, default=2, help="number of hosts (default 2)")
    cmd_up.add_argument("--subnet", help="loopback /24 such as 127.0.77 (env POZOL_FLEET_SUBNET)")
    cmd_up.add_argument("--port", type=int, help="sshd port on every host (default 22)")
    cmd_up.add_argument("--pool-size", help=POOL_SIZE_HELP)
    cmd_up.add_argument("--pg-major", type=int, default=15,
                        help="PostgreSQL major of the new hosts: 15 (the machine's, default)"
                             " or one package.json pins (postgresql-18, from make node)")
    cmd_up.add_argument("--login-user", default="root",
                        help="the user the new hosts are reached as: root (default), or an "
                             "ordinary user with PoZoL's sudoers rules, such as pozol")
    cmd_up.set_defaults(run=_up)
    cmd_status = commands.add_parser("status", help="hosts and whether their processes run")
    cmd_status.set_defaults(run=_status)
    cmd_down = commands.add_parser("down", help="stop every host and remove the state dir")
    cmd_down.set_defaults(run=_down)
    for command in (cmd_up, cmd_status, cmd_down):
        command.add_argument(
            "--state-dir", help="default /tmp/pozol-fleet (env POZOL_FLEET_STATE_DIR)"
        )
        command.add_argument("--json", action="store_true", help="print JSON")
    cmd_serve = commands.add_parser(
        "serve", help="run one host in the foreground until SIGTERM/SIGINT, then stop it"
        " (keeping its keys)"
    )
    cmd_serve.add_argument(
        "--listen", required=True, help="IPv4 address sshd binds, such as 0.0.0.0"
    )
    cmd_serve.add_argument(
        "--advertise", help="address clients dial (default: --listen, or the hostname for 0.0.0.0)"
    )
    cmd_serve.add_argument("--subnet", help="loopback /24 for the host's PostgreSQL (as up)")
    cmd_serve.add_argument("--port", type=int, help="sshd port (default 22)")
    cmd_serve.add_argument("--pool-size", help=POOL_SIZE_HELP)
    cmd_serve.add_argument(
        "--state-dir", help="default /tmp/pozol-fleet (env POZOL_FLEET_STATE_DIR)"
    )
    cmd_serve.set_defaults(run=_serve)
    return parser


def _up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    majors = dict.fromkeys(range(1, args.hosts + 1), args.pg_major)
    logins = dict.fromkeys(range(1, args.hosts + 1), args.login_user)
    hosts = up(args.hosts, args.state_dir, args.subnet, args.port, pool_size=args.pool_size,
               majors=majors, logins=logins)
    log.info("%d host(s) up in %.1fs", len(hosts), time.monotonic() - started)
    if args.json:
        print(json.dumps([h.to_dict() for h in hosts], indent=2))
    for host in [] if args.json else hosts:
        print(
            f"{host.name}  ssh -i {host.private_key_path} -o UserKnownHostsFile="
            f"{host.known_hosts_path} -p {host.port} {host.user}@{host.address}"
        )
    return 0


def _status(args: argparse.Namespace) -> int:
    hosts = status(args.state_dir)
    if args.json:
        print(json.dumps([h.to_dict() for h in hosts], indent=2))
    for host in [] if args.json else hosts:
        processes = " ".join(f"{name}={'up' if ok else 'DOWN'}" for name, ok in host.alive.items())
        print(f"{host.name}  {host.address}  {processes}")
    return 0 if all(h.up for h in hosts) else 3


def _down(args: argparse.Namespace) -> int:
    started = time.monotonic()
    names = down(args.state_dir)
    log.info("stopped %s in %.1fs", ", ".join(names) or "nothing", time.monotonic() - started)
    return 0


def _serve(args: argparse.Namespace) -> int:
    """One host whose sshd listens on --listen, in the foreground; stopped on SIGTERM/SIGINT.

    Prints what `status --json` prints for that host, whose "address" is
    where a client should dial (--advertise, else --listen, else for 0.0.0.0
    the hostname; recorded, so that `status` and register_demo_fleet say the
    same); then the host key's fingerprint and the client key's path. The
    host's PostgreSQL keeps listening on its loopback address only.

    Meant as a container's main process (docker-compose.yml, demo-host), whose
    state dir is a volume that outlives the container. Stopping takes the host
    down and removes its directory (pool, data, logs) but keeps the state dir
    with the client key and the host key, so the host comes back with the keys
    the control plane pinned: a restarted container is discovered again
    without anyone accepting a new key. A killed container leaves host.json
    with dead PIDs and the pool image behind: `up` treats that host as not up,
    stops only processes it can still prove are its own, removes the host dir
    and builds the host again (new pool, initdb, pgbench data; same keys).
    Reimporting the old pool would keep data across restarts but needs code
    the fleet does not have; a demo host that starts clean every time is also
    more predictable.

    A signal that arrives while the host is starting is honoured once it is
    up; one that arrives during the stop is ignored, so the stop always finishes.
    """
    stop = threading.Event()

    def handle(signum: int, frame: object) -> None:
        log.info("%s received, taking the host down", signal.Signals(signum).name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handle)
    started = time.monotonic()
    # up removes whatever it started if it fails, and cleans up what a killed
    # previous run left in the state dir.
    (host,) = up(1, args.state_dir, args.subnet, args.port, listen=args.listen,
                 pool_size=args.pool_size)
    try:
        advertise(args.state_dir, host.name, args.advertise or _dial_address(args.listen))
        served = _as_host(status(args.state_dir)[0])
        log.info(
            "serving %s at %s:%d (up after %.1fs); SIGTERM or SIGINT takes it down",
            served.name,
            served.address,
            served.port,
            time.monotonic() - started,
        )
        print(json.dumps([served.to_dict()], indent=2))
        print(f"host key fingerprint: {served.host_key_fingerprint}")
        print(f"client private key: {served.private_key_path}")
        print(
            f"ssh -i {served.private_key_path} -o UserKnownHostsFile={served.known_hosts_path}"
            f" -p {served.port} {served.user}@{served.address}",
            flush=True,
        )
        while not stop.wait(1):
            pass
    finally:
        names = down(args.state_dir, keep_keys=True)
        log.info("stopped %s; kept the keys in %s", ", ".join(names) or "nothing",
                 resolve_config(args.state_dir).state_dir)
    return 0


def _as_host(found: HostStatus) -> Host:
    fields = {k: v for k, v in found.to_dict().items() if k not in ("alive", "up")}
    return Host(**fields)


def _dial_address(listen: str) -> str:
    if ipaddress.IPv4Address(listen).is_unspecified:
        return socket.gethostname()
    return listen


if __name__ == "__main__":
    sys.exit(main())
