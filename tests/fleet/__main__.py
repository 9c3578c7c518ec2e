"""Command line: python -m tests.fleet up|status|down (see tests/fleet/__init__.py)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from .fleet import down, status, up
from .settings import FleetError

log = logging.getLogger("tests.fleet")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="fleet: %(message)s", stream=sys.stderr)
    try:
        return args.run(args)
    except FleetError as exc:
        print(f"fleet: error: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.fleet", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="{up,status,down}")
    cmd_up = commands.add_parser("up", help="start hosts 1..N (idempotent)")
    cmd_up.add_argument("--hosts", type=int, default=2, help="number of hosts (default 2)")
    cmd_up.add_argument("--subnet", help="loopback /24 such as 127.0.77 (env POZOL_FLEET_SUBNET)")
    cmd_up.add_argument("--port", type=int, help="sshd port on every host (default 22)")
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
    return parser


def _up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    hosts = up(args.hosts, args.state_dir, args.subnet, args.port)
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


if __name__ == "__main__":
    sys.exit(main())
