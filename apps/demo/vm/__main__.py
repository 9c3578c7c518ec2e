"""python -m apps.demo.vm build [--recipe NAME]: build (or find) the cached image."""

from __future__ import annotations

import argparse
import json
import sys

from . import image


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m apps.demo.vm")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build the image unless it is cached")
    build.add_argument("--recipe", default=image.TRIXIE.name, choices=sorted(image.RECIPES))
    args = parser.parse_args(argv)
    try:
        built = image.ensure(image.RECIPES[args.recipe])
    except image.ImageError as error:
        print(f"pozol-vm: {error}", file=sys.stderr)
        return 1
    print(json.dumps({"directory": str(built.directory), "versions": built.versions}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
