"""The OpenZFS VM test host from the command line.

    python -m apps.demo.vm build                    # build the image unless cached
    python -m apps.demo.vm up --state-dir D --address 127.0.120.250 [--alias A] --json
    python -m apps.demo.vm down --state-dir D

`up` boots the cached image (building it first if needed), provisions its pool and
packaged cluster and prints the host as `python -m apps.demo.fleet up --json` does;
`POZOL_TEST_VM_JSON=<that file>` then lets the suite's VM group use it instead of
booting its own. `down` stops it by its recorded PID and removes its pool disk.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from . import image, machine


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "down":
            machine.shutdown(Path(args.state_dir))
            return 0
        built = image.ensure(image.RECIPES[args.recipe])
        if args.command == "build":
            print(json.dumps({"directory": str(built.directory), "versions": built.versions},
                             indent=2))
            return 0
        aliases = tuple(args.alias)
        host = machine.boot(built, Path(args.state_dir), args.address, aliases=aliases)
        machine.provision(host, built.recipe.pg_major, aliases=aliases)
    except image.ImageError as error:
        print(f"pozol-vm: {error}", file=sys.stderr)
        return 1
    print(json.dumps([dataclasses.asdict(host)], indent=2) if args.json else host.address)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m apps.demo.vm")
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("build", "up"):
        command = commands.add_parser(name)
        command.add_argument("--recipe", default=image.TRIXIE.name, choices=sorted(image.RECIPES))
    up = commands.choices["up"]
    up.add_argument("--state-dir", required=True)
    up.add_argument("--address", required=True, help="a loopback address for its sshd")
    up.add_argument("--alias", action="append", default=[],
                    help="another address of the same guest (a second host name)")
    up.add_argument("--json", action="store_true")
    commands.add_parser("down").add_argument("--state-dir", required=True)
    return parser


if __name__ == "__main__":
    sys.exit(main())
